"""Which pool each node of the cluster belongs to (upstream's ``nodePoolLabel`` rules).

A node's pool is the value of its ``nodePoolLabel`` label, or the executor's ``pool`` when it
has none; a node carrying the reservation taint (``armadaproject.io/reservation``) is in the
reserved sub-pool ``<pool><reservedNodePoolSuffix>`` instead. One cluster may so serve many
pools, and one pool may span many clusters.
"""

from __future__ import annotations

import msgspec

from armada.model.leases import NodeReport

#: Taint key that marks a node reserved (for one team or purpose), as upstream.
RESERVATION_TAINT = "armadaproject.io/reservation"


def node_pool(node: NodeReport, *, default_pool: str, label: str, reserved_suffix: str) -> str:
    """The pool of ``node``."""
    pool = node.labels.get(label, "") if label else ""
    pool = pool or default_pool
    if reserved_suffix and any(t.key == RESERVATION_TAINT for t in node.taints):
        pool += reserved_suffix
    return pool


def with_pools(
    nodes: list[NodeReport], *, default_pool: str, label: str, reserved_suffix: str
) -> list[NodeReport]:
    """``nodes`` with ``pool`` set where it differs from the executor's pool (left out otherwise,
    so a single-pool executor's reports are what they always were)."""
    out: list[NodeReport] = []
    for node in nodes:
        pool = node_pool(node, default_pool=default_pool, label=label, reserved_suffix=reserved_suffix)
        out.append(node if pool == default_pool else msgspec.structs.replace(node, pool=pool))
    return out
