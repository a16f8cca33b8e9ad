"""The forward loop every simulation shares: the real scheduling core run in simulated time.

Not a second scheduler: :func:`run_forward` calls :func:`schedule` cycle after cycle on the
job db it is given and applies each cycle's decisions with :func:`apply_decisions`. Between
cycles simulated time jumps to the next event: the end of a running job, the next item of
the timeline (a job arriving, an executor's nodes or a queue's settings changing, a
cancellation), or one cycle period on while a cycle is still placing jobs (rate limits).
Fair share evolves as it does live: the usage history is carried from cycle to cycle at
simulated time.

Start-time forecasts (:mod:`.forecast`) and what-if replays of the recorded log
(``armada simulate``) are both this loop with a different :class:`Observer`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from armada.scheduling.config import SchedulingConfig
from armada.scheduling.decisions import SchedulingResult
from armada.scheduling.jobdb import RUNNING, JobDb
from armada.scheduling.nodes import NodeSpec
from armada.scheduling.queues import QueueSpec
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.schedule import apply_decisions, schedule
from armada.scheduling.state import SchedulerState


@dataclass(frozen=True)
class NodeChange:
    """An executor's nodes from this time on (none: the executor left). Jobs running on a
    node that is gone return to their queue, as lost runs do live."""

    executor: str
    nodes: tuple[NodeSpec, ...]


@dataclass(frozen=True)
class Cancel:
    """A job cancelled at this time: it leaves the queue, or ends if running."""

    job_id: str


@dataclass(frozen=True)
class QueueChange:
    """A queue's settings from this time on (its weight, limits, cordon)."""

    queue: QueueSpec


#: What happens at a given time whatever the scheduler decides.
TimelineItem = JobRequirements | NodeChange | Cancel | QueueChange
#: Given jobs, the seconds each runs and the basis of each.
Runtimes = Callable[[list[str]], tuple[Sequence[float], Sequence[str]]]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Observer(Protocol):
    """What a simulation records as the loop runs."""

    def cycle(self, t: float, result: SchedulingResult, db: JobDb) -> None:
        """After a cycle at ``t``, before its decisions are applied to ``db``."""

    def ended(self, t: float, rows: IntArray, bases: Sequence[str], db: JobDb) -> None:
        """Running jobs (their ``rows`` in ``db``) reached their end at ``t`` (``bases[i]`` is
        the basis of ``rows[i]``'s runtime); they are still in the db, on their nodes, and
        leave it next."""

    def left(self, t: float, job_id: str, running: bool, why: str) -> None:
        """A job cancelled (``why`` = "cancelled"), lost with its node (``"lost"``, requeued),
        or whose run failed and is retried (``"failed"``, requeued)."""

    def done(self) -> bool:
        """True once nothing more needs simulating."""


@dataclass
class Forward:
    """The loop's inputs. ``db`` is changed in place: pass a copy."""

    db: JobDb
    queues: Sequence[QueueSpec]
    config: SchedulingConfig
    state: SchedulerState
    #: Seconds each of the jobs runs from ``t`` (a running job at the start: the seconds
    #: *left*), and the basis of each.
    runtime: Runtimes
    #: ``(time, item)`` in time order.
    timeline: Sequence[tuple[float, TimelineItem]] = ()
    #: Per job, the seconds each of its first runs runs before it fails and the job is
    #: queued again (a replay of recorded retries); its last run takes ``runtime``.
    failures: Mapping[str, Sequence[float]] = field(default_factory=dict)
    paused_executors: Collection[str] = ()
    #: Seconds between cycles: the shortest simulated step.
    cycle_period: float = 1.0
    #: When the live scheduler decided (a replay of the log): cycles run at these instants,
    #: or as something changes when no instant follows within ``cycle_period``.
    cycle_instants: Sequence[float] = ()
    #: Seconds from a cycle's decision until its leases are recorded (the live loop's compute
    #: and append): a leased job starts, and holds its node, that much later.
    lease_latency: float = 0.0
    #: The latency of the cycle at each of ``cycle_instants`` (others take ``lease_latency``).
    cycle_latencies: Sequence[float] = ()
    #: For each of ``cycle_instants``, from when the live loop was not deciding until then
    #: (it could have made some of that cycle's leases, and did not): no cycle runs between.
    cycle_stalled: Sequence[float] = ()
    #: Events closer than this fraction of the time already simulated share one step.
    coarsening: float = 0.0
    #: Nodes of each executor as the timeline last set them (filled as it goes).
    executor_nodes: dict[str, set[str]] = field(default_factory=dict)

    def latency(self, t: float) -> float:
        """Seconds after a cycle at ``t`` decided that its leases take effect."""
        instants = self.cycle_latencies and self.cycle_instants
        i = bisect.bisect_left(instants, t)
        return self.cycle_latencies[i] if i < len(instants) and instants[i] == t else self.lease_latency


def run_forward(forward: Forward, start: float, end: float, observer: Observer) -> int:
    """Simulate from ``start`` until ``end``, ``observer.done()``, or nothing can change; the
    number of cycles run."""
    db = forward.db
    # No time budget (simulations are off the critical path) and a frozen clock: deterministic.
    config = msgspec.structs.replace(forward.config, max_scheduling_duration=0.0)
    jobs = _Jobs(forward.runtime, forward.failures, db)
    jobs.run(np.flatnonzero(db.cols["state"][: len(db.ids)] == RUNNING), start)
    next_item = 0
    state, t, cycles = forward.state, start, 0
    _end_due(db, jobs, t, observer)
    while t <= end and not observer.done():
        next_item = _apply_due(forward, next_item, t, observer)
        jobs.follow()
        cycle = schedule(
            db,
            queues=forward.queues,
            config=config,
            state=state,
            now=t,
            clock=_frozen,
            paused_executors=forward.paused_executors,
            explain=False,
        )
        cycles += 1
        state = cycle.state
        observer.cycle(t, cycle, db)
        if observer.done():
            break  # what was watched has happened: the decisions need not be applied
        apply_decisions(db, cycle)
        # A lease sets the run's end: an earlier run of the same job (preempted, lost) never ends it.
        jobs.run(np.array(cycle.leases.rows, dtype=np.int64), t + forward.latency(t))
        following = _next_cycle(forward, jobs, next_item, t, start, placed=len(cycle.leases) > 0)
        if math.isinf(following):
            break  # nothing runs, nothing was placed, nothing is to come: nothing will change
        t = following
        _end_due(db, jobs, t, observer)
    db.renumbering = None  # no one follows the rows any more
    return cycles


def _next_cycle(
    forward: Forward, jobs: _Jobs, next_item: int, t: float, start: float, *, placed: bool
) -> float:
    """When the next cycle runs: once something can change (an end, an arrival, or more to
    place), one step on at the soonest; in a replay, at the next recorded cycle instant."""
    instants, timeline = forward.cycle_instants, forward.timeline
    step = 0.0 if instants else max(forward.cycle_period, (t - start) * forward.coarsening)
    due = t + step if placed else math.inf
    if len(jobs.end_at):
        due = min(due, max(float(jobs.end_at.min()), t + step))  # inf: none running
    if next_item < len(timeline):
        due = min(due, max(timeline[next_item][0], t + step))
    if not instants or math.isinf(due):
        return due
    i = max(bisect.bisect_left(instants, due), bisect.bisect_right(instants, t))
    recorded = instants[i] if i < len(instants) else math.inf
    if recorded <= due + forward.cycle_period or (
        i < len(forward.cycle_stalled) and forward.cycle_stalled[i] <= due
    ):
        return recorded
    # A change no recorded cycle followed within a period: a cycle the live loop ran but
    # that leased nothing, so it left no trace; run it when the change happens.
    return max(due, math.nextafter(t, math.inf))


class _Jobs:
    """The simulation's runs, by job db row: each job's runtime (asked once, when it first
    runs) and its basis, and when its current run ends (arrays)."""

    def __init__(self, runtime: Runtimes, failures: Mapping[str, Sequence[float]], db: JobDb) -> None:
        self.runtime = runtime
        self.failures = failures
        self.db = db
        db.renumbering = []  # rows index these arrays: follow the db's compactions
        #: Of jobs with runs to fail, the seconds of each run to come, the current one's last.
        self.attempts: dict[str, list[float]] = {}
        #: Seconds each job runs (a job running at the start: the seconds left), once asked.
        self.left = np.zeros(0)
        self.asked = np.zeros(0, dtype=bool)
        self.basis = np.zeros(0, dtype=object)
        #: When each job's current run ends (``inf``: not running).
        self.end_at = np.zeros(0)
        #: The order in which jobs first ran: runs ending together are reported in it.
        self.first = np.zeros(0, dtype=np.int64)
        self.ran = 0
        self.follow()

    def follow(self) -> None:
        """Follow the db's compactions and new rows since the last call."""
        for new_row in self.db.renumbering or ():
            self._resize(len(new_row))
            kept = new_row >= 0
            live = int(np.count_nonzero(kept))
            for name, fill in _RUN_COLUMNS.items():
                old = getattr(self, name)
                column = np.full(live, fill, dtype=old.dtype)
                column[new_row[kept]] = old[kept]
                setattr(self, name, column)
        if self.db.renumbering:
            self.db.renumbering.clear()
        self._resize(len(self.db.ids))

    def _resize(self, size: int) -> None:
        grow = size - len(self.left)
        if grow > 0:
            for name, fill in _RUN_COLUMNS.items():
                old = getattr(self, name)
                setattr(self, name, np.concatenate([old, np.full(grow, fill, dtype=old.dtype)]))

    def run(self, rows: IntArray, t: float) -> None:
        """The jobs of ``rows`` start a run at ``t``: it ends when their runtime (or failing run) is up."""
        new = rows[~self.asked[rows]]
        if len(new):
            self._ask(new)
        self.end_at[rows] = t + np.maximum(0.0, self.left[rows])

    def _ask(self, rows: IntArray) -> None:
        ids = self.db.ids_of(rows)
        seconds, bases = self.runtime(ids)
        left = np.array(seconds, dtype=float)
        if self.failures:
            for i, job_id in enumerate(ids):
                if failing := self.failures.get(job_id):
                    self.attempts[job_id] = [float(left[i]), *reversed(failing)]
                    left[i] = failing[0]
        self.left[rows] = left
        self.basis[rows] = bases
        self.asked[rows] = True
        self.first[rows] = np.arange(self.ran, self.ran + len(rows))
        self.ran += len(rows)

    def failed(self, rows: IntArray, job_ids: Sequence[str]) -> BoolArray:
        """Of the jobs whose runs just ended, those whose run failed: each is to run again,
        for its next failing run's seconds or else its runtime."""
        failed = np.zeros(len(rows), dtype=bool)
        for i, (row, job_id) in enumerate(zip(rows.tolist(), job_ids, strict=True)):
            attempts = self.attempts.get(job_id)
            if attempts is None:
                continue
            failed[i] = True
            attempts.pop()
            self.left[row] = attempts[-1]
            if len(attempts) == 1:
                del self.attempts[job_id]
        return failed


#: :class:`_Jobs`' arrays and the value of a row not yet run.
_RUN_COLUMNS: dict[str, object] = {
    "left": 0.0,
    "asked": False,
    "basis": None,
    "end_at": math.inf,
    "first": -1,
}


def _apply_due(forward: Forward, next_item: int, t: float, observer: Observer) -> int:
    """Apply the timeline's items due by ``t`` in order (arrivals in bulk); the next item's index."""
    db, timeline = forward.db, forward.timeline
    arrivals: list[JobRequirements] = []
    while next_item < len(timeline) and timeline[next_item][0] <= t:
        item = timeline[next_item][1]
        next_item += 1
        if isinstance(item, JobRequirements):
            arrivals.append(item)
            continue
        if arrivals:
            db.add_many(arrivals)
            arrivals = []
        if isinstance(item, Cancel):
            if item.job_id in db:
                running = db.state(item.job_id) == RUNNING
                db.remove(item.job_id)
                observer.left(t, item.job_id, running, "cancelled")
        elif isinstance(item, QueueChange):
            _change_queue(forward, item.queue)
        else:
            _change_nodes(forward, item, t, observer)
    if arrivals:
        db.add_many(arrivals)
    return next_item


def _change_queue(forward: Forward, spec: QueueSpec) -> None:
    known = any(queue.name == spec.name for queue in forward.queues)
    others = [spec if queue.name == spec.name else queue for queue in forward.queues]
    forward.queues = others if known else [*others, spec]


def _change_nodes(forward: Forward, change: NodeChange, t: float, observer: Observer) -> None:
    db = forward.db
    now = {node.id for node in change.nodes}
    for node_id in forward.executor_nodes.get(change.executor, set()) - now:
        row = db.nodes.row(node_id)
        if row is not None:
            for job_row in sorted(db.jobs_on_node(row)):
                job_id = db.ids[job_row]
                if job_id is not None and db.state(job_id) == RUNNING:
                    db.requeue(job_id)
                    observer.left(t, job_id, True, "lost")
        db.nodes.remove(node_id)
    for node in change.nodes:
        db.nodes.upsert(node)
    forward.executor_nodes[change.executor] = now


def _end_due(db: JobDb, jobs: _Jobs, t: float, observer: Observer) -> None:
    """End the runs due by ``t`` (a run preempted, cancelled or lost since has left already)."""
    due = np.flatnonzero(jobs.end_at <= t)
    if not len(due):
        return
    jobs.end_at[due] = math.inf
    ending = due[db.cols["state"][due] == RUNNING]
    ending = ending[np.argsort(jobs.first[ending])]
    if jobs.attempts:
        failed = jobs.failed(ending, db.ids_of(ending))
        for job_id in db.ids_of(ending[failed]):
            db.requeue(job_id)
            observer.left(t, job_id, True, "failed")
        ending = ending[~failed]
    observer.ended(t, ending, jobs.basis[ending].tolist(), db)
    db.remove_rows(ending)


def _frozen() -> float:
    return 0.0
