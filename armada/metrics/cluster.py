"""Queue and cluster gauges under upstream's names and labels, from the scheduler's in-memory state.

Queued figures come from aggregates the job database already maintains (queued counts per
queue and scheduling key); allocation from one vectorised pass over the job rows holding a
run, grouped by queue, key, pool and cluster; capacity from one pass over the nodes. A scrape
never loops over jobs in Python.

Upstream's labels that have no meaning here get upstream's defaults: no price band
(``priceBand="None"``), node type, reservation or scalable unit, and every node is its own
pool's (``physical_pool`` is the pool, ``capacity_class="dedicated"``). ``accounting_role``
says which pool counts a queued job once: ``primary`` in the first pool (in pool order) the
job may run in, ``secondary`` in the others.
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
from armada.scheduling.unique_rows import unique_rows

Vector = npt.NDArray[np.float64]

NO_PRICE_BAND = "None"
QUEUED_LABELS = [
    "pool",
    "priorityClass",
    "queueName",
    "queue",
    "priceBand",
    "resourceType",
    "accounting_role",
]
ALLOCATED_LABELS = [
    "cluster",
    "pool",
    "priorityClass",
    "queueName",
    "queue",
    "priceBand",
    "resourceType",
    "nodeType",
    "reservation",
    "physical_pool",
    "scalable_unit",
]
CLUSTER_LABELS = [
    "cluster",
    "pool",
    "resourceType",
    "nodeType",
    "reservation",
    "physical_pool",
    "capacity_class",
    "scalable_unit",
]


class ClusterCollector(Collector):
    """``armada_queue_*`` and ``armada_cluster_*`` gauges."""

    def __init__(self, state: Callable[[], ClusterState]) -> None:
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        names = state.jobs.resources.names
        scale = np.array([float(resolution_of(name)) for name in names])
        yield from self._queues(state, names, scale)
        yield self._allocated(state, names, scale)
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
            "armada_queue_resource_queued", "Resource required by queued jobs.", labels=QUEUED_LABELS
        )
        keys = GaugeMetricFamily(
            "armada_queue_distinct_scheduling_keys",
            "Number of distinct scheduling keys requested by a queue.",
            labels=["queueName", "queue"],
        )
        pool_info = GaugeMetricFamily(
            "armada_scheduler_pool_info", "Pools that are being scheduled.", labels=["pool"]
        )
        for pool in pools:
            pool_info.add_metric([pool], 1)
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
            keys.add_metric([queue, queue], sum(1 for count in counts.values() if count))
            jobs, requested = _queued_in(db, counts, pools)
            for (pool, priority_class), count in jobs.items():
                size.add_metric([queue, pool, priority_class], count)
            for (pool, priority_class, role), vector in requested.items():
                for column in np.flatnonzero(vector).tolist():
                    labels = [pool, priority_class, queue, queue, NO_PRICE_BAND, names[column], role]
                    queued.add_metric(labels, float(vector[column]) * scale[column])
        yield from (size, by_state, queued, keys, pool_info)

    @staticmethod
    def _allocated(state: ClusterState, names: list[str], scale: Vector) -> Metric:
        """Requests of the jobs holding a run, by cluster, pool, priority class and queue."""
        family = GaugeMetricFamily(
            "armada_queue_resource_allocated",
            "Resource allocated to running jobs of a queue.",
            labels=ALLOCATED_LABELS,
        )
        db, nodes = state.jobs, state.nodes
        n = len(db.ids)
        rows = np.flatnonzero(db.cols["state"][:n] == RUNNING)
        node = db.cols["node"][rows].astype(np.int64)
        rows, node = rows[(node >= 0) & (node < nodes.size)], node[(node >= 0) & (node < nodes.size)]
        groups = unique_rows(
            np.stack(
                [
                    db.cols["queue"][rows].astype(np.int64),
                    db.cols["key"][rows].astype(np.int64),
                    db.cols["pool"][rows].astype(np.int64),
                    node,
                ],
                axis=1,
            )
        )
        requests = db.keys.requests()
        totals: dict[tuple[str, str, str, str, str], Vector] = {}
        for (queue, key, pool, row), count in zip(*(part.tolist() for part in groups[::2]), strict=True):
            spec = nodes.specs[row]
            if spec is None:
                continue
            run_pool = db.pool_names[pool] if pool >= 0 else spec.pool
            priority_class = db.keys.infos[key].priority_class
            group = (spec.executor, run_pool, priority_class, db.queue_names[queue], spec.pool)
            held = count * requests[key].astype(np.float64)
            totals[group] = totals[group] + held if group in totals else held
        for (cluster, pool, priority_class, queue, physical), vector in sorted(totals.items()):
            for column in np.flatnonzero(vector).tolist():
                labels = [cluster, pool, priority_class, queue, queue, NO_PRICE_BAND, names[column]]
                family.add_metric([*labels, "", "", physical, ""], float(vector[column]) * scale[column])
        return family

    @staticmethod
    def _capacity(state: ClusterState, names: list[str], scale: Vector) -> Iterator[Metric]:
        """Upstream's three capacity gauges, with its ``nodes`` resource (node counts)."""
        capacity = GaugeMetricFamily("armada_cluster_capacity", "Cluster capacity.", labels=CLUSTER_LABELS)
        farm = GaugeMetricFamily(
            "armada_cluster_farm_capacity",
            "Cluster capacity less usage from non-Armada pods.",
            labels=CLUSTER_LABELS,
        )
        available = GaugeMetricFamily(
            "armada_cluster_available_capacity",
            "Cluster capacity available for Armada jobs (schedulable nodes of uncordoned clusters).",
            labels=CLUSTER_LABELS,
        )
        nodes = state.nodes
        groups: dict[tuple[str, str], list[int]] = {}
        for row, spec in enumerate(nodes.specs):
            if spec is not None:
                groups.setdefault((spec.executor, spec.pool), []).append(row)
        total = nodes.allocatable()
        for_armada = nodes.reported(np.maximum(total - nodes.non_armada(), 0))
        total = nodes.reported(total)
        for (cluster, pool), rows in sorted(groups.items()):
            index = np.array(rows, dtype=np.int64)
            usable = index[nodes.schedulable[index]] if cluster not in state.cordoned_executors else index[:0]
            # No node with a pod limit (the process and fake backends): no pods series, rather
            # than a capacity of 0 beside allocated pods.
            unlimited = {PODS} if nodes.unlimited_pods[index].all() else set()
            figures = (
                (capacity, total[index].sum(axis=0), len(index)),
                (farm, for_armada[index].sum(axis=0), None),
                (available, for_armada[usable].sum(axis=0), len(usable)),
            )
            for family, sums, node_count in figures:
                labels = [cluster, pool, "", "", "", pool, "dedicated", ""]
                for column, name in enumerate(names):
                    if name not in unlimited:
                        labels[2] = name
                        family.add_metric(list(labels), float(sums[column]) * scale[column])
                if node_count is not None:
                    labels[2] = "nodes"
                    family.add_metric(labels, node_count)
        yield from (capacity, farm, available)


def _queued_in(
    db: JobDb, counts: dict[int, int], pools: list[str]
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str, str], Vector]]:
    """Queued jobs per (pool, priority class), and the resources they request per (pool,
    priority class, accounting role), in every pool each job may run in."""
    jobs = {(pool, name): 0 for pool in pools for name in db.priority_class_names}
    requested: dict[tuple[str, str, str], Vector] = {}
    for key, count in counts.items():
        info = db.keys.infos[key]
        allowed = [pool for pool in pools if info.allows_pool(pool)]
        vector = count * db.keys.request(key).astype(np.float64)
        for position, pool in enumerate(allowed):
            jobs[(pool, info.priority_class)] += count
            slot = (pool, info.priority_class, "primary" if position == 0 else "secondary")
            requested[slot] = requested.get(slot, 0) + vector
    return jobs, requested
