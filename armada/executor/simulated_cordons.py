"""Node cordons ordered by the server, for backends without a real cluster (process, fake).

The server names, on every lease call, the nodes operators cordoned (``cordonNodes``); the
agent cordons those it does not hold cordoned yet and uncordons the rest. A simulated or
local node is then reported unschedulable, as a cordoned Kubernetes node would be.
"""

from __future__ import annotations

import msgspec

from armada.model.leases import NodeReport

#: The annotation a cordoned Kubernetes node carries (upstream's name), with the reason.
CORDON_REASON_ANNOTATION = "armadaproject.io/cordon-reason"


class LocalCordons:
    """Base of the process and fake backends: the ``ClusterBackend`` cordon calls, kept in
    memory, and the node reports they change."""

    def __init__(self) -> None:
        self._reasons: dict[str, str] = {}

    async def cordon(self, node: str, reason: str | None) -> None:
        """Cordon ``node`` (with ``reason``) or, for ``None``, uncordon it."""
        if reason is None:
            self._reasons.pop(node, None)
        else:
            self._reasons[node] = reason

    async def cordoned_nodes(self) -> list[str]:
        return sorted(self._reasons)

    def cordons_applied(self, nodes: list[NodeReport]) -> list[NodeReport]:
        """``nodes`` with the cordoned ones unschedulable."""
        if not self._reasons:
            return nodes
        return [
            msgspec.structs.replace(node, unschedulable=True) if node.name in self._reasons else node
            for node in nodes
        ]
