"""Job timing histograms, observed from the events the log follower applies.

Queued time is measured from submission to each lease, using the submission time the job
database already holds; run time from the ``running`` event to the run's end, remembering a
start time per running job only (bounded by what the clusters can run at once).
"""

from __future__ import annotations

from typing import ClassVar

from prometheus_client import CollectorRegistry, Histogram

from armada.model import events as ev
from armada.model.lifecycle import RUN_STATE_AFTER
from armada.scheduler.cluster_state import ClusterState

BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600)

#: Events that end a job's current run, and the outcome label they give it.
_RUN_ENDS: dict[type[ev.Event], str] = {
    cls: RUN_STATE_AFTER[str(cls.__struct_config__.tag)].value.lower() for cls in ev.RUN_ENDS
}


class JobTimings:
    """Follower listener filling ``armada_job_queued_seconds`` and ``armada_job_run_time_seconds``."""

    events: ClassVar[tuple[type[ev.Event], ...]] = (ev.JobLeased, ev.JobRunning, *_RUN_ENDS)

    def __init__(self, registry: CollectorRegistry) -> None:
        self.queued = Histogram(
            "armada_job_queued_seconds",
            "Seconds from a job's submission to its lease.",
            ["queue", "pool"],
            registry=registry,
            buckets=BUCKETS,
        )
        self.run_time = Histogram(
            "armada_job_run_time_seconds",
            "Seconds a run spent running, by how it ended.",
            ["queue", "pool", "outcome"],
            registry=registry,
            buckets=BUCKETS,
        )
        #: job id -> (running since, pool)
        self._running: dict[str, tuple[float, str]] = {}
        #: Each label set's histogram, looked up once: ``labels()`` takes a lock and checks
        #: the values on every call, and this runs for every lease and every run's end.
        self._children: dict[tuple[str, ...], Histogram] = {}

    def _child(self, histogram: Histogram, *labels: str) -> Histogram:
        key = ("queued" if histogram is self.queued else "run_time", *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = histogram.labels(*labels)
        return child

    def __call__(self, state: ClusterState, event: ev.Event) -> None:
        if isinstance(event, ev.JobLeased):
            if event.job_id in state.jobs:
                submitted = float(state.jobs.cols["submitted"][state.jobs.row(event.job_id)])
                moment = event.created.timestamp()
                self._child(self.queued, event.queue, event.pool).observe(max(0.0, moment - submitted))
        elif isinstance(event, ev.JobRunning):
            run = state.runs.get(event.run_id)
            pool = (
                state.executors[run.executor].pool if run and run.executor in state.executors else event.pool
            )
            self._running.setdefault(event.job_id, (event.created.timestamp(), pool))
        elif (outcome := _RUN_ENDS.get(type(event))) is not None:
            started = self._running.pop(event.job_id, None)
            if started is not None:
                moment = event.created.timestamp()
                child = self._child(self.run_time, event.queue, started[1], outcome)
                child.observe(max(0.0, moment - started[0]))
