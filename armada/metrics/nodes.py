"""Per-node gauges under upstream's names and labels, and each executor's last report.

Read at scrape time from the node database (one pass over the nodes); upstream's node
labels that have no meaning here get upstream's defaults (no node type, reservation or
scalable unit; every node is its pool's own, ``capacity_class="dedicated"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.model.quantities import resolution_of
from armada.model.resources import PODS
from armada.scheduler.cluster_state import ClusterState, split_node_key

NODE_LABELS = [
    "pool",
    "node",
    "cluster",
    "nodeType",
    "resource",
    "reservation",
    "schedulable",
    "overAllocated",
    "physical_pool",
    "capacity_class",
    "scalable_unit",
]


#: What :class:`NodeCollector` exposes.
FAMILIES = (
    "armada_scheduler_node_allocatable_resource",
    "armada_scheduler_node_allocated_resource",
    "armada_scheduler_node_pool_size",
    "armada_executor_last_heartbeat_timestamp_seconds",
)


class NodeCollector(Collector):
    """``armada_scheduler_node_*`` and ``armada_executor_last_heartbeat_timestamp_seconds``."""

    def __init__(self, state: Callable[[], ClusterState]) -> None:
        self._state = state

    def describe(self) -> Iterator[Metric]:
        """The families' names, so that a request for other series (``?name[]=``) skips the nodes."""
        for name in FAMILIES:
            yield GaugeMetricFamily(name, "")

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        nodes, names = state.nodes, state.jobs.resources.names
        scale = np.array([float(resolution_of(name)) for name in names])
        allocatable_family = GaugeMetricFamily(
            "armada_scheduler_node_allocatable_resource",
            "Resource that can be allocated to Armada jobs on this node (allocatable minus other pods).",
            labels=NODE_LABELS,
        )
        allocated_family = GaugeMetricFamily(
            "armada_scheduler_node_allocated_resource",
            "Resource allocated by Armada jobs on this node.",
            labels=NODE_LABELS,
        )
        pool_size = GaugeMetricFamily(
            "armada_scheduler_node_pool_size", "Number of nodes in each pool.", labels=["pool"]
        )
        allocatable = nodes.allocatable() - nodes.non_armada()
        allocated = state.jobs.node_allocation().sum(axis=1)[: nodes.size]
        sizes: dict[str, int] = {}
        for row, spec in enumerate(nodes.specs):
            if spec is None:
                continue
            sizes[spec.pool] = sizes.get(spec.pool, 0) + 1
            over = bool((allocated[row] > allocatable[row]).any())
            for column, name in enumerate(names):
                if name == PODS and nodes.unlimited_pods[row]:
                    continue
                labels = [
                    spec.pool,
                    split_node_key(spec.id)[1],
                    spec.executor,
                    "",
                    name,
                    "",
                    str(bool(nodes.schedulable[row])).lower(),
                    str(over).lower(),
                    spec.pool,
                    "dedicated",
                    "",
                ]
                allocatable_family.add_metric(
                    labels, max(0.0, float(allocatable[row, column]) * scale[column])
                )
                allocated_family.add_metric(labels, max(0.0, float(allocated[row, column]) * scale[column]))
        for pool, size in sorted(sizes.items()):
            pool_size.add_metric([pool], size)
        yield from (allocatable_family, allocated_family, pool_size)
        yield self._last_reports(state)

    @staticmethod
    def _last_reports(state: ClusterState) -> Metric:
        family = GaugeMetricFamily(
            "armada_executor_last_heartbeat_timestamp_seconds",
            "When the executor last called in (heartbeat or node report), in Unix seconds.",
            labels=["cluster", "pool"],
        )
        for executor, info in sorted(state.executors.items()):
            if info.last_seen:
                family.add_metric([executor, info.pool], info.last_seen)
        return family
