"""What the event log recorded over a time window, as a workload to replay and as outcomes.

The workload is what happened whatever the scheduler decided: when each job arrived and
what it asked for, how long it ran once started, when it was cancelled, which nodes each
executor offered over time, and the queues' settings over time. The outcome is what the
scheduler made of it: each job's runs (where, from when to when, and whether the work was
lost).

A run's length is its hold on the node: from ``leased`` to the event that ended it. The
runtime replayed for a job is its last run's, when that run finished (succeeded or failed);
a job that was preempted, lost or still running at the window's end gets the median of its
queue and shape's finished runs (else the time it ran); a cancelled job runs until its
cancellation. A run that failed and was retried (the job leased again) is replayed as a
run of its length that fails, the job then queued again.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore import schema
from armada.model import events as ev
from armada.scheduler.cluster_state import ClusterState, node_key
from armada.scheduling import QueueSpec, SchedulingConfig
from armada.scheduling.nodes import NodeSpec
from armada.scheduling.replay import Cancel, NodeChange, QueueChange, TimelineItem
from armada.scheduling.requirements import JobRequirements, RequirementsError, job_requirements
from armada.services.simulation.cycles import CycleLog, CycleTiming

log = structlog.get_logger(__name__)

#: The event types a replay needs (heartbeats, pending, running and the rest are skipped).
_READ: tuple[type[ev.Event], ...] = (
    ev.QueueCreated,
    ev.QueueUpdated,
    ev.ExecutorReported,
    ev.ExecutorDeleted,
    ev.JobSubmitted,
    ev.JobLeased,
    *ev.RUN_ENDS,
)
READ_TYPES = tuple(str(kind.__struct_config__.tag) for kind in _READ)
#: Events fetched from the database at a time.
READ_CHUNK = 10_000


@dataclass(slots=True)
class Run:
    """One run's hold on a node: ``end`` is ``None`` while it still runs; ``lost`` = its work
    was thrown away (preempted, lease returned or expired)."""

    pool: str
    start: float
    end: float | None = None
    lost: bool = False


@dataclass(slots=True)
class Outcome:
    """What became of one job."""

    queue: str
    submitted: float
    requests: dict[str, int]
    runs: list[Run] = field(default_factory=list)
    preempted: bool = False

    @property
    def started(self) -> float | None:
        return self.runs[0].start if self.runs else None


@dataclass
class RecordedLog:
    """The window ``[since, until]`` of the log (seconds since the epoch)."""

    since: float
    until: float
    #: Queues as they were at ``since`` (one created later: as created); changes in the
    #: window are in the timeline.
    queues: dict[str, QueueSpec]
    #: Jobs submitted in the window, by id.
    jobs: dict[str, JobRequirements]
    #: Seconds each job holds its node once started (``inf``: until cancelled or the window ends).
    runtimes: dict[str, float]
    #: Per job whose runs failed and were retried, each such run's seconds, in order.
    failures: dict[str, list[float]]
    #: Arrivals, cancellations, executors' node changes and queues' changes, in time order.
    timeline: list[tuple[float, TimelineItem]]
    #: What the recorded scheduler did with each job.
    outcomes: dict[str, Outcome]
    #: The live cycles' leases of the window's jobs and their runs' ends.
    cycle_log: CycleLog = field(default_factory=CycleLog)
    #: Median seconds from what woke a cycle (a submission, a run's end, a node change) to
    #: the leases it recorded.
    decision_latency: float = 0.0

    @cached_property
    def cycles(self) -> CycleTiming:
        """When each live cycle decided and recorded its leases: a replay decides then, so it
        sees the arrivals and ends each live cycle saw (see :mod:`.cycles`)."""
        return self.cycle_log.timing(self.decision_latency)


async def read_recorded(engine: AsyncEngine, since: float, until: float) -> RecordedLog:
    """Read the window from the log (queues and executors as set before it, too)."""
    reader = _Reader(since, until)
    async for created, event in _events(engine, until):
        reader.apply(created, event)
    return reader.finish()


async def _events(engine: AsyncEngine, until: float) -> AsyncIterator[tuple[float, ev.AnyEvent]]:
    events = schema.events
    query = (
        select(events.c.created, events.c.payload)
        .where(events.c.type.in_(READ_TYPES), events.c.created <= datetime.fromtimestamp(until, UTC))
        .order_by(events.c.seq)
    )
    async with engine.connect() as conn:
        result = await conn.stream(query.execution_options(yield_per=READ_CHUNK))
        async for rows in result.partitions(READ_CHUNK):  # a chunk at a time: far cheaper than a row
            for created, payload in rows:
                try:
                    event = ev.decode_event(payload)
                except ValueError as exc:  # an unreadable record is left out, not fatal
                    log.warning("simulate: event skipped", error=str(exc))
                    continue
                stamp = created if created.tzinfo else created.replace(tzinfo=UTC)
                yield stamp.timestamp(), event


class _Reader:
    """Folds the log's events into a :class:`RecordedLog`."""

    def __init__(self, since: float, until: float) -> None:
        self.since, self.until = since, until
        # Queue specs and node specs exactly as the live scheduler derives them.
        self.cluster = ClusterState(SchedulingConfig())
        self.jobs: dict[str, JobRequirements] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.finished: dict[str, float] = {}
        self.cancelled: dict[str, float] = {}
        #: A job's last run's seconds while it failed and is not (yet) leased again.
        self.failed: dict[str, float] = {}
        self.failures: dict[str, list[float]] = defaultdict(list)
        self.timeline: list[tuple[float, TimelineItem]] = []
        #: Queues as at ``since`` (or as created after it).
        self.queues: dict[str, QueueSpec] = {}
        self.cycle_log = CycleLog()
        #: Per executor and node key, what the node offers Armada (allocatable less other pods')
        #: and since when.
        self.room: dict[str, dict[str, tuple[dict[str, int], float]]] = {}
        #: When the last event that wakes the scheduler was recorded, and each lease's delay after it.
        self.woken: float | None = None
        self.latencies: list[float] = []

    def apply(self, t: float, event: ev.AnyEvent) -> None:
        if t >= self.since:
            self._time_decisions(t, event)
        if isinstance(event, ev.QueueCreated | ev.QueueUpdated):
            self._queue(t, event)
        elif isinstance(event, ev.ExecutorReported | ev.ExecutorDeleted):
            self._nodes(t, event)
        elif isinstance(event, ev.JobSubmitted):
            if t >= self.since:
                self._submitted(t, event)
        elif (outcome := self.outcomes.get(event.job_id)) is not None:
            self._job_event(t, event, outcome)

    def _queue(self, t: float, event: ev.QueueCreated | ev.QueueUpdated) -> None:
        self.cluster.apply(0, event)
        spec = self.cluster.queues[event.spec.name]
        self.queues.setdefault(spec.name, spec)
        if t >= self.since:
            self.timeline.append((t, QueueChange(spec)))
        else:
            self.queues[spec.name] = spec

    def _time_decisions(self, t: float, event: ev.AnyEvent) -> None:
        if not isinstance(event, ev.JobLeased):
            self.woken = t
        elif self.woken is not None:
            self.latencies.append(t - self.woken)

    def _nodes(self, t: float, event: ev.ExecutorReported | ev.ExecutorDeleted) -> None:
        if isinstance(event, ev.ExecutorDeleted):
            event = ev.ExecutorReported(executor_id=event.executor_id, nodes=[])
        self.cluster.apply(0, event)
        nodes = self.cluster.nodes
        rows = [nodes.row(node_key(event.executor_id, node.name)) for node in event.nodes]
        specs = tuple(spec for row in rows if row is not None and (spec := nodes.specs[row]) is not None)
        self._offered(t, event.executor_id, specs)
        change = NodeChange(event.executor_id, specs)
        self.timeline.append((max(t, self.since), change))

    def _offered(self, t: float, executor: str, specs: tuple[NodeSpec, ...]) -> None:
        """Note what ``executor``'s nodes offer, and since when (a node that left and came back,
        or offers something else, since ``t``)."""
        before, now = self.room.get(executor, {}), {}
        for spec in specs:
            room = {r: amount - spec.non_armada_allocated.get(r, 0) for r, amount in spec.allocatable.items()}
            was = before.get(spec.id)
            now[spec.id] = was if was is not None and was[0] == room else (room, t)
        self.room[executor] = now

    def _submitted(self, t: float, event: ev.JobSubmitted) -> None:
        try:
            job = job_requirements(event.job, submitted=t)
        except (RequirementsError, ValueError) as exc:
            log.warning("simulate: job left out", job_id=event.job.id, error=str(exc))
            return
        self.jobs[job.id] = job
        self.outcomes[job.id] = Outcome(queue=job.queue, submitted=t, requests=job.requests)
        self.timeline.append((t, job))

    def _job_event(self, t: float, event: ev.AnyEvent, outcome: Outcome) -> None:
        run = outcome.runs[-1] if outcome.runs and outcome.runs[-1].end is None else None
        if isinstance(event, ev.JobLeased):
            if (seconds := self.failed.pop(event.job_id, None)) is not None:
                self.failures[event.job_id].append(seconds)  # retried: not its last run
                del self.finished[event.job_id]
            outcome.runs.append(Run(pool=event.pool, start=t))
            node = node_key(event.cluster_id, event.node_id)
            room, since = self.room.get(event.cluster_id, {}).get(node, ({}, -math.inf))
            ready = max(outcome.submitted, since)
            self.cycle_log.leased(t, event.job_id, node, ready, outcome.requests, room)
            return
        if run is not None:
            run.end = t
            self.cycle_log.ended(t, event.job_id)
            run.lost = isinstance(event, ev.JobPreempted | ev.JobLeaseReturned | ev.JobLeaseExpired)
        if isinstance(event, ev.JobPreempted):
            outcome.preempted = True
        elif isinstance(event, ev.JobSucceeded | ev.JobFailed) and run is not None:
            self.finished[event.job_id] = t - run.start
            if isinstance(event, ev.JobFailed):
                self.failed[event.job_id] = t - run.start
        elif isinstance(event, ev.JobCancelled):
            self.cancelled[event.job_id] = t
            self.timeline.append((t, Cancel(event.job_id)))

    def finish(self) -> RecordedLog:
        by_shape: dict[tuple[str, tuple[tuple[str, int], ...]], list[float]] = defaultdict(list)
        for job_id, seconds in self.finished.items():
            job = self.jobs[job_id]
            by_shape[(job.queue, tuple(sorted(job.requests.items())))].append(seconds)
        medians = {shape: statistics.median(values) for shape, values in by_shape.items()}
        runtimes: dict[str, float] = {}
        for job_id, job in self.jobs.items():
            if job_id in self.finished:
                runtimes[job_id] = self.finished[job_id]
            elif job_id in self.cancelled:
                runtimes[job_id] = math.inf
            else:
                ran = sum((r.end or self.until) - r.start for r in self.outcomes[job_id].runs)
                runtimes[job_id] = medians.get((job.queue, tuple(sorted(job.requests.items()))), ran)
        self.timeline.sort(key=lambda item: item[0])
        return RecordedLog(
            since=self.since,
            until=self.until,
            queues=self.queues,
            jobs=self.jobs,
            runtimes=runtimes,
            failures=dict(self.failures),
            timeline=self.timeline,
            outcomes=self.outcomes,
            cycle_log=self.cycle_log,
            decision_latency=statistics.median(self.latencies) if self.latencies else 0.0,
        )
