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

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.model import events as ev
from armada.model.resources import resolution_of
from armada.services.cluster_state import ClusterState

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


class JobStateMetrics(Collector):
    """Follower listener and collector of upstream's per-queue and per-node state counters."""

    events: ClassVar[tuple[type[ev.Event], ...]] = (ev.JobLeased, ev.JobPending, ev.JobRunning, *_ENDS)

    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = time.time) -> None:
        by_queue = ["queue", "pool", "state", "priorState"]
        by_node = ["node", "pool", "cluster", "state", "priorState"]
        errors = ["category", "subcategory"]
        prefix = "armada_scheduler_job_"

        def counter(name: str, doc: str, labels: list[str]) -> Counter:
            return Counter(f"{prefix}{name}", doc, labels, registry=registry)

        self._counters = {
            "by_queue": counter("state_counter_by_queue", "Job states at queue level.", by_queue),
            "by_node": counter("state_counter_by_node", "Job states at node level.", by_node),
            "seconds_by_queue": counter(
                "state_seconds_by_queue", "Seconds spent in the prior state, by queue.", by_queue
            ),
            "seconds_by_node": counter(
                "state_seconds_by_node", "Seconds spent in the prior state, by node.", by_node
            ),
            "resource_by_queue": counter(
                "state_resource_seconds_by_queue",
                "Requested resources times seconds spent in the prior state, by queue.",
                [*by_queue, "resource"],
            ),
            "resource_by_node": counter(
                "state_resource_seconds_by_node",
                "Requested resources times seconds spent in the prior state, by node.",
                [*by_node, "resource"],
            ),
        }
        self._lost = counter(
            "resource_seconds_lost_to_preemption",
            "Resource-seconds of preempted runs (checkpoint_interval is always none).",
            ["queue", "pool", "checkpoint_interval", "resource"],
        )
        self._errors = {
            "queue": counter(
                "error_classification_by_queue",
                "Failed jobs by failure category, by queue.",
                ["queue", "pool", *errors],
            ),
            "node": counter(
                "error_classification_by_node",
                "Failed jobs by failure category, by node.",
                ["node", "pool", "cluster", *errors],
            ),
        }
        registry.register(self)
        self._clock = clock
        self._held: dict[str, _Held] = {}
        #: Leased jobs not yet pending or running, in lease order (the first is the oldest).
        self._unstarted: dict[str, float] = {}
        self._children: dict[tuple[str, ...], Counter] = {}

    def collect(self) -> Iterator[Metric]:
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
            self._child(self._errors["queue"], event.queue, held.pool, *error).inc()
            self._child(self._errors["node"], held.node, held.pool, held.cluster, *error).inc()
        if ended == "preempted" and held.state == "running":
            for resource, amount in held.requests.items():
                lost = amount * max(0.0, moment - held.since)
                self._child(self._lost, event.queue, held.pool, "none", resource).inc(lost)

    def _leased(self, state: ClusterState, event: ev.JobLeased, moment: float) -> None:
        db = state.jobs
        requests: dict[str, float] = {}
        submitted = moment
        if event.job_id in db:
            row = db.row(event.job_id)
            submitted = float(db.cols["submitted"][row])
            vector = db.keys.request(int(db.cols["key"][row]))
            names = db.resources.names
            requests = {
                name: float(vector[i]) * float(resolution_of(name))
                for i, name in enumerate(names)
                if vector[i]
            }
        queued = _Held("queued", submitted, event.pool, event.node_id, event.cluster_id, requests)
        self._count(event.queue, queued, "leased", moment)
        queued.state, queued.since = "leased", moment
        self._held[event.job_id] = queued
        self._unstarted[event.job_id] = moment

    def _count(self, queue: str, held: _Held, new: str, moment: float) -> None:
        seconds = max(0.0, moment - held.since)
        by_queue = (queue, held.pool, new, held.state)
        by_node = (held.node, held.pool, held.cluster, new, held.state)
        self._child(self._counters["by_queue"], *by_queue).inc()
        self._child(self._counters["by_node"], *by_node).inc()
        self._child(self._counters["seconds_by_queue"], *by_queue).inc(seconds)
        self._child(self._counters["seconds_by_node"], *by_node).inc(seconds)
        for resource, amount in held.requests.items():
            self._child(self._counters["resource_by_queue"], *by_queue, resource).inc(amount * seconds)
            self._child(self._counters["resource_by_node"], *by_node, resource).inc(amount * seconds)

    def _child(self, counter: Counter, *labels: str) -> Counter:
        """Each label set's child, looked up once (``labels()`` locks and checks every call)."""
        key = (str(id(counter)), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = counter.labels(*labels)
        return child
