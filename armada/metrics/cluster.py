"""Queue and cluster gauges, computed at scrape time from the scheduler's in-memory state.

Everything comes from aggregates the job and node databases already maintain (queued
counts per queue and scheduling key, allocation per queue and per node), so a scrape costs
queues x keys plus one pass over the nodes, never a scan of the jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.model.quantities import resolution_of
from armada.model.resources import PODS
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling import JobDb
from armada.scheduling.jobdb import RUNNING

Vector = npt.NDArray[np.float64]


class ClusterCollector(Collector):
    """``armada_queue_*`` and ``armada_cluster_*`` gauges."""

    def __init__(self, state: Callable[[], ClusterState]) -> None:
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        names = state.jobs.resources.names
        scale = np.array([float(resolution_of(name)) for name in names])
        yield from self._queues(state, names, scale)
        yield from self._capacity(state, names, scale)

    def _queues(self, state: ClusterState, names: list[str], scale: Vector) -> Iterator[Metric]:
        db = state.jobs
        known = {info.pool for info in state.executors.values()} | set(state.nodes.pool_rows())
        pools = sorted(known | set(db.pool_names)) or ["default"]
        size = GaugeMetricFamily(
            "armada_queue_queued_jobs",
            "Queued jobs; a job that may run in several pools counts in each.",
            labels=["queue", "pool", "priorityClass"],
        )
        # Upstream's series: a job counts once, queued or holding a run (leased to running).
        by_state = GaugeMetricFamily(
            "armada_queue_size", "Jobs of the queue by state.", labels=["queueName", "queue", "state"]
        )
        queued = GaugeMetricFamily(
            "armada_queue_resource_queued",
            "Resources requested by queued jobs (cpu in cores, memory in bytes).",
            labels=["queue", "pool", "resource"],
        )
        allocated = GaugeMetricFamily(
            "armada_queue_resource_allocated",
            "Resources held by the queue's leased and running jobs.",
            labels=["queue", "pool", "resource"],
        )
        index = {name: i for i, name in enumerate(db.queue_names)}
        # One pass over the job rows: jobs holding a run (leased to running) per queue.
        n = len(db.ids)
        holding = np.bincount(db.cols["queue"][:n][db.cols["state"][:n] == RUNNING], minlength=len(index))
        for queue in sorted(set(state.queues) | set(index)):
            row = index.get(queue)
            counts = db.queued_counts[row] if row is not None else {}
            running = int(holding[row]) if row is not None and row < len(holding) else 0
            by_state.add_metric([queue, queue, "queued"], sum(counts.values()))
            by_state.add_metric([queue, queue, "running"], running)
            for pool in pools:
                by_class, requested = _queued_in(db, counts, pool)
                held = np.zeros_like(requested) if row is None else db.queue_allocation(row, pool).sum(axis=0)
                for priority_class, count in by_class.items():
                    size.add_metric([queue, pool, priority_class], count)
                for column, name in enumerate(names):
                    queued.add_metric([queue, pool, name], requested[column] * scale[column])
                    allocated.add_metric([queue, pool, name], held[column] * scale[column])
        yield from (size, by_state, queued, allocated)

    def _capacity(self, state: ClusterState, names: list[str], scale: Vector) -> Iterator[Metric]:
        capacity = GaugeMetricFamily(
            "armada_cluster_capacity",
            "Allocatable resources of the cluster's live nodes.",
            labels=["pool", "cluster", "resource"],
        )
        available = GaugeMetricFamily(
            "armada_cluster_available_capacity",
            "Resources free for Armada jobs on schedulable nodes (allocatable minus other pods and jobs).",
            labels=["pool", "cluster", "resource"],
        )
        nodes, db = state.nodes, state.jobs
        groups: dict[tuple[str, str], list[int]] = {}
        for row, spec in enumerate(nodes.specs):
            if spec is not None:
                groups.setdefault((spec.pool, spec.executor), []).append(row)
        allocatable = nodes.allocatable()
        free = nodes.reported(
            allocatable - nodes.non_armada() - db.node_allocation().sum(axis=1)[: nodes.size]
        )
        allocatable = nodes.reported(allocatable)
        for (pool, cluster), rows in sorted(groups.items()):
            index = np.array(rows, dtype=np.int64)
            usable = index[nodes.schedulable[index]]
            total = allocatable[index].sum(axis=0)
            spare = np.maximum(free[usable], 0).sum(axis=0)
            # No node with a pod limit (the process and fake backends): no pods series, rather
            # than a capacity of 0 beside allocated pods.
            unlimited = {PODS} if nodes.unlimited_pods[index].all() else set()
            for column, name in enumerate(names):
                if name in unlimited:
                    continue
                capacity.add_metric([pool, cluster, name], float(total[column]) * scale[column])
                available.add_metric([pool, cluster, name], float(spare[column]) * scale[column])
        yield from (capacity, available)


def _queued_in(db: JobDb, counts: dict[int, int], pool: str) -> tuple[dict[str, int], Vector]:
    """Queued jobs per priority class, and the resources they request, of those allowed in ``pool``."""
    by_class = dict.fromkeys(db.priority_class_names, 0)
    requested = np.zeros(len(db.resources.names))
    for key, count in counts.items():
        info = db.keys.infos[key]
        if info.allows_pool(pool):
            by_class[info.priority_class] += count
            requested += count * db.keys.request(key)
    return by_class, requested
