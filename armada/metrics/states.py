"""Upstream's job state transition counters, observed from the events the log follower applies.

Same names and labels as upstream's scheduler (``armada_scheduler_job_state_*``, lost
preemption resource-seconds) so its dashboards keep working; the Python client adds
``_total`` to every counter. Each job is remembered from its lease to its run's end only
(bounded by what the clusters hold at once); a job ending with no lease was queued before.
The oldest lease not yet started is a gauge: leases that never start are stuck.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.model import events as ev
from armada.model.quantities import resolution_of
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling.keys import KeyTable

#: Events that end a job's run, and the state upstream gives them (``None``: back to queued,
#: which upstream does not count as a transition).
_ENDS: dict[type[ev.Event], str | None] = {
    ev.JobSucceeded: "succeeded",
    ev.JobFailed: "failed",
    ev.JobCancelled: "cancelled",
    ev.JobPreempted: "preempted",
    ev.JobLeaseReturned: None,
    ev.JobLeaseExpired: None,
}


@dataclass(slots=True)
class _Held:
    """A leased job: its current state, since when, where, and what it requests."""

    state: str
    since: float
    pool: str
    node: str
    cluster: str
    requests: dict[str, float]


class _Totals:
    """One counter family's totals by label values: a dict add per event (a client ``Counter``
    child takes a lock and a method call per increment, several per transition here)."""

    def __init__(self, name: str, doc: str, labels: list[str]) -> None:
        self.name, self.doc, self.labels = name, doc, labels
        self.values: dict[tuple[str, ...], float] = {}

    def add(self, labels: tuple[str, ...], amount: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def family(self) -> Metric:
        family = CounterMetricFamily(self.name, self.doc, labels=self.labels)
        for labels, total in self.values.items():
            family.add_metric(labels, total)
        return family


class JobStateMetrics(Collector):
    """Follower listener and collector of upstream's per-queue and per-node state counters."""

    events: ClassVar[tuple[type[ev.Event], ...]] = (ev.JobLeased, ev.JobPending, ev.JobRunning, *_ENDS)

    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = time.time) -> None:
        by_queue = ["queue", "pool", "state", "priorState"]
        by_node = ["node", "pool", "cluster", "state", "priorState"]
        errors = ["category", "subcategory"]
        prefix = "armada_scheduler_job_"
        self._by_queue = _Totals(f"{prefix}state_counter_by_queue", "Job states at queue level.", by_queue)
        self._by_node = _Totals(f"{prefix}state_counter_by_node", "Job states at node level.", by_node)
        self._seconds_by_queue = _Totals(
            f"{prefix}state_seconds_by_queue", "Seconds spent in the prior state, by queue.", by_queue
        )
        self._seconds_by_node = _Totals(
            f"{prefix}state_seconds_by_node", "Seconds spent in the prior state, by node.", by_node
        )
        self._resource_by_queue = _Totals(
            f"{prefix}state_resource_seconds_by_queue",
            "Requested resources times seconds spent in the prior state, by queue.",
            [*by_queue, "resource"],
        )
        self._resource_by_node = _Totals(
            f"{prefix}state_resource_seconds_by_node",
            "Requested resources times seconds spent in the prior state, by node.",
            [*by_node, "resource"],
        )
        self._lost = _Totals(
            f"{prefix}resource_seconds_lost_to_preemption",
            "Resource-seconds of preempted runs (checkpoint_interval is always none).",
            ["queue", "pool", "checkpoint_interval", "resource"],
        )
        self._errors_by_queue = _Totals(
            f"{prefix}error_classification_by_queue",
            "Failed jobs by failure category, by queue.",
            ["queue", "pool", *errors],
        )
        self._errors_by_node = _Totals(
            f"{prefix}error_classification_by_node",
            "Failed jobs by failure category, by node.",
            ["node", "pool", "cluster", *errors],
        )
        self._clock = clock
        self._held: dict[str, _Held] = {}
        #: Leased jobs not yet pending or running, in lease order (the first is the oldest).
        self._unstarted: dict[str, float] = {}
        #: Requests in base units by scheduling key (shared by the jobs held: never mutated).
        self._requests: dict[int, dict[str, float]] = {}
        self._keys: KeyTable | None = None
        registry.register(self)

    def collect(self) -> Iterator[Metric]:
        for totals in (
            self._by_queue,
            self._by_node,
            self._seconds_by_queue,
            self._seconds_by_node,
            self._resource_by_queue,
            self._resource_by_node,
            self._lost,
            self._errors_by_queue,
            self._errors_by_node,
        ):
            yield totals.family()
        oldest = next(iter(self._unstarted.values()), None)
        yield GaugeMetricFamily(
            "armada_scheduler_oldest_unstarted_lease_seconds",
            "Age of the oldest lease whose run is neither pending nor running yet (0: none).",
            value=0.0 if oldest is None else max(0.0, self._clock() - oldest),
        )

    def __call__(self, state: ClusterState, event: ev.Event) -> None:
        moment = event.created.timestamp()
        if isinstance(event, ev.JobLeased):
            self._leased(state, event, moment)
            return
        held = self._held.get(event.job_id)
        self._unstarted.pop(event.job_id, None)
        if isinstance(event, ev.JobPending | ev.JobRunning):
            if held is not None:
                new = "pending" if isinstance(event, ev.JobPending) else "running"
                self._count(event.queue, held, new, moment)
                held.state, held.since = new, moment
            return
        self._held.pop(event.job_id, None)
        ended = _ENDS[type(event)]
        if ended is None:
            return
        if held is None:
            held = _Held("queued", moment, getattr(event, "pool", ""), "", "", {})
        self._count(event.queue, held, ended, moment)
        if isinstance(event, ev.JobFailed):
            error = (event.failure_category, event.failure_subcategory)
            self._errors_by_queue.add((event.queue, held.pool, *error))
            self._errors_by_node.add((held.node, held.pool, held.cluster, *error))
        if ended == "preempted" and held.state == "running":
            for resource, amount in held.requests.items():
                lost = amount * max(0.0, moment - held.since)
                self._lost.add((event.queue, held.pool, "none", resource), lost)

    def _leased(self, state: ClusterState, event: ev.JobLeased, moment: float) -> None:
        db = state.jobs
        requests: dict[str, float] = {}
        submitted = moment
        if event.job_id in db:
            row = db.row(event.job_id)
            submitted = float(db.cols["submitted"][row])
            if db.keys is not self._keys:  # a reloaded state numbers its keys anew
                self._keys, self._requests = db.keys, {}
            key = int(db.cols["key"][row])
            requests = self._requests.get(key, {})
            if key not in self._requests:
                # A scheduling key's requests never change: converted once per key.
                vector, names = db.keys.request(key).tolist(), db.resources.names
                requests = {
                    name: v * float(resolution_of(name)) for name, v in zip(names, vector, strict=False) if v
                }
                self._requests[key] = requests
        queued = _Held("queued", submitted, event.pool, event.node_id, event.cluster_id, requests)
        self._count(event.queue, queued, "leased", moment)
        queued.state, queued.since = "leased", moment
        self._held[event.job_id] = queued
        self._unstarted[event.job_id] = moment

    def _count(self, queue: str, held: _Held, new: str, moment: float) -> None:
        seconds = max(0.0, moment - held.since)
        by_queue = (queue, held.pool, new, held.state)
        by_node = (held.node, held.pool, held.cluster, new, held.state)
        self._by_queue.add(by_queue)
        self._by_node.add(by_node)
        self._seconds_by_queue.add(by_queue, seconds)
        self._seconds_by_node.add(by_node, seconds)
        for resource, amount in held.requests.items():
            self._resource_by_queue.add((*by_queue, resource), amount * seconds)
            self._resource_by_node.add((*by_node, resource), amount * seconds)
