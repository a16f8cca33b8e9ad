"""Forecasts: when queued jobs will start, by running the real scheduling core forward.

Not a second scheduler: :func:`simulate` copies the job db and calls :func:`schedule` cycle
after cycle on the copy, applying each cycle's decisions with :func:`apply_decisions`.
Between cycles simulated time jumps to the next event, the expected end of a running job
(or one cycle period on, while a cycle is still placing jobs: rate limits, lease caps),
and the jobs due by then are removed from the copy. Fair share evolves as it does live:
the usage history is carried from cycle to cycle at simulated time; gangs, urgency,
preemption, limits, pools and cordons come from the core itself.

What is not simulated: jobs not yet submitted (beyond those the caller adds), failures
and retries (a preempted job leaves), executors joining or leaving. Far ahead, events are
merged into steps of :data:`COARSENING` of the time already simulated, so a week-long
forecast costs tens of cycles, not one per job end.

:func:`forecast` runs one simulation with every job's expected runtime and reports for
each queued job the simulated start corrected, and given a ``[low, high]`` range, by a
:class:`~armada.scheduling.calibration.Calibration` learned from past forecasts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec
import numpy as np
import numpy.typing as npt

from armada.scheduling.arrivals import original_id
from armada.scheduling.calibration import Calibration
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.jobdb import FREE, QUEUED, RUNNING, JobDb
from armada.scheduling.queues import QueueSpec
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.runtimes import RuntimeEstimate
from armada.scheduling.schedule import apply_decisions, schedule
from armada.scheduling.state import SchedulerState

IntArray = npt.NDArray[np.int64]

#: Default horizon: seven days. Jobs not started by then are "not within the horizon".
DEFAULT_HORIZON = 7 * 24 * 3600.0
#: Events closer than this fraction of the time already simulated are merged into one step.
COARSENING = 0.02
#: The basis of a job that starts in the first simulated cycle.
ROOM_NOW = "room now"


@dataclass
class ForecastSnapshot:
    """The state a forecast starts from. The engine copies ``db``; it never changes it."""

    db: JobDb
    queues: Sequence[QueueSpec]
    config: SchedulingConfig
    state: SchedulerState
    #: Seconds on the scheduler's clock (the epoch of ``state``'s token buckets and usage).
    now: float
    #: Executors whose nodes take no new jobs (cordoned or paused), as in the live cycle.
    paused_executors: Collection[str] = ()
    #: Running job -> when its run started; a running job not listed started ``now``.
    started: Mapping[str, float] = field(default_factory=dict)
    #: Seconds between live cycles: the shortest simulated step.
    cycle_period: float = 1.0
    #: Jobs not submitted: added to the copy as queued (``submit --dry-run``, what-if).
    extra_jobs: Sequence[JobRequirements] = ()
    #: Jobs expected to arrive later, ``(time, job)`` in time order (:mod:`.arrivals`): simulated
    #: from their time on, never reported.
    arrivals: Sequence[tuple[float, JobRequirements]] = ()
    #: Events closer than this fraction of the time already simulated share one step.
    coarsening: float = COARSENING


class JobForecast(msgspec.Struct, frozen=True):
    """One job's forecast: start times in the snapshot's clock, ``None`` = not within the horizon."""

    expected_start: float | None
    low: float | None
    high: float | None
    basis: str
    #: Why the job will never start (``fits no node shape``), else empty.
    rejected: str = ""
    #: The simulation's start, before calibration (what :meth:`Calibration.observe` learns from).
    simulated: float | None = None


@dataclass
class Simulation:
    """One forward run: start time and basis per started job, and the jobs rejected."""

    starts: dict[str, float] = field(default_factory=dict)
    basis: dict[str, str] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    cycles: int = 0


def simulate(
    snapshot: ForecastSnapshot,
    runtime: Callable[[str], tuple[float, str]],
    horizon: float = DEFAULT_HORIZON,
    *,
    waiting_for: Collection[str | None] | None = None,
) -> Simulation:
    """Run the scheduling core forward from ``snapshot`` until every queued job (or every
    one of ``waiting_for``) has started or ``horizon`` seconds have passed.

    ``runtime(job_id)`` gives the seconds a job runs (for a running job: the seconds *left*
    from ``snapshot.now``) and the basis of that figure, reported for the jobs that start
    when it ends. It is asked once per job, when the job enters the simulation.
    """
    db = snapshot.db.copy()
    if snapshot.extra_jobs:
        db.add_many(snapshot.extra_jobs)
    # No time budget (the forecast is off the critical path) and a frozen clock: deterministic.
    config = msgspec.structs.replace(snapshot.config, max_scheduling_duration=0.0)
    now, end = snapshot.now, snapshot.now + horizon
    jobs = _Jobs(runtime)
    n = len(db.ids)
    states = db.cols["state"][:n]
    live = [db.ids[r] for r in np.flatnonzero(states != FREE).tolist()]
    jobs.add(live)
    running = jobs.index([db.ids[r] for r in np.flatnonzero(states == RUNNING).tolist()])
    jobs.end_at[running] = now + np.maximum(0.0, jobs.left[running])
    if waiting_for is None:
        waiting_for = [job_id for r in np.flatnonzero(states == QUEUED).tolist() if (job_id := db.ids[r])]
    waiting = np.zeros(len(jobs.ids), dtype=bool)
    waiting[jobs.index(waiting_for)] = True
    remaining = int(waiting.sum())
    start_at = np.full(len(jobs.ids), math.nan)
    freed_at = np.zeros(len(jobs.ids), dtype=np.int64)
    result = Simulation()
    state, t = snapshot.state, now
    freed_by = _end_due(db, jobs, t) or 0  # 0: jobs.bases[0], room now
    arrivals, arrived = snapshot.arrivals, 0
    while remaining and t <= end:
        due = arrived
        while due < len(arrivals) and arrivals[due][0] <= t:
            due += 1
        if due > arrived:
            db.add_many(job for _, job in arrivals[arrived:due])
            jobs.add([job.id for _, job in arrivals[arrived:due]])
            arrived = due
        cycle = schedule(
            db,
            queues=snapshot.queues,
            config=config,
            state=state,
            now=t,
            clock=_frozen,
            paused_executors=snapshot.paused_executors,
        )
        result.cycles += 1
        state = cycle.state
        leased = jobs.index(cycle.leases.job_ids)
        jobs.end_at[leased] = t + np.maximum(0.0, jobs.left[leased])
        reported = leased[leased < len(waiting)]  # arrivals are simulated, never reported
        started = reported[waiting[reported]]
        waiting[started] = False
        start_at[started] = t
        freed_at[started] = freed_by
        remaining -= len(started)
        for rejection in cycle.rejections:
            i = jobs.position.get(rejection.job_id)
            if i is not None and i < len(waiting) and waiting[i]:
                waiting[i] = False
                remaining -= 1
                result.rejected[rejection.job_id] = rejection.reason
        apply_decisions(db, cycle)
        step = max(snapshot.cycle_period, (t - now) * snapshot.coarsening)
        following = t + step if len(cycle.leases) else math.inf
        next_end = float(jobs.end_at.min()) if len(jobs.end_at) else math.inf
        if not math.isinf(next_end):
            following = min(following, max(next_end, t + step))
        if math.isinf(following):
            break  # nothing runs and nothing was placed: nothing will change
        if arrived < len(arrivals):
            following = min(following, max(arrivals[arrived][0], t + step))
        t = following
        ended = _end_due(db, jobs, t)
        freed_by = freed_by if ended is None else ended
    for i in np.flatnonzero(~np.isnan(start_at)).tolist():
        job_id = jobs.ids[i]
        result.starts[job_id] = float(start_at[i])
        result.basis[job_id] = jobs.bases[int(freed_at[i])]
    return result


class _Jobs:
    """The simulation's jobs by position: runtimes asked once, expected ends as an array."""

    def __init__(self, runtime: Callable[[str], tuple[float, str]]) -> None:
        self.runtime = runtime
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        #: Seconds each job runs (a running job: left from the snapshot's ``now``).
        self.left = np.zeros(0)
        #: Index in :attr:`bases` of each job's runtime basis.
        self.basis = np.zeros(0, dtype=np.int64)
        #: When each running job ends (``inf``: not running).
        self.end_at = np.zeros(0)
        self.bases: list[str] = [ROOM_NOW]
        self._basis_index = {ROOM_NOW: 0}

    def add(self, job_ids: Sequence[str | None]) -> None:
        left, basis = [], []
        for job_id in job_ids:
            assert job_id is not None
            self.position[job_id] = len(self.ids)
            self.ids.append(job_id)
            seconds, why = self.runtime(job_id)
            left.append(seconds)
            basis.append(self._basis_index.setdefault(why, len(self.bases)))
            if len(self.bases) < len(self._basis_index):
                self.bases.append(why)
        self.left = np.concatenate([self.left, np.asarray(left, dtype=float)])
        self.basis = np.concatenate([self.basis, np.asarray(basis, dtype=np.int64)])
        self.end_at = np.concatenate([self.end_at, np.full(len(left), math.inf)])

    def index(self, job_ids: Iterable[str | None]) -> IntArray:
        position = self.position
        return np.fromiter((position[j] for j in job_ids if j is not None), dtype=np.int64)


def forecast(
    snapshot: ForecastSnapshot,
    estimates: Mapping[str, RuntimeEstimate],
    default: RuntimeEstimate,
    horizon: float = DEFAULT_HORIZON,
    *,
    calibration: Calibration | None = None,
    extra_only: bool = False,
) -> dict[str, JobForecast]:
    """Expected start and ``[low, high]`` range of every queued job (and ``extra_jobs``).

    ``estimates`` holds each job's total runtime; running jobs' remaining time is derived
    from their elapsed time (:meth:`RuntimeEstimate.remaining`). Extrapolated arrivals
    take their original's; jobs without one get ``default``. One simulation with the
    expected runtimes gives each job's simulated start; ``calibration`` (its prior
    factors if ``None``) turns it into the expected start and the range. With
    ``extra_only``, only ``extra_jobs`` are forecast (the simulation ends once they start).
    """

    def runtime(job_id: str) -> tuple[float, str]:
        estimate = estimates.get(job_id) or estimates.get(original_id(job_id), default)
        started = snapshot.started.get(job_id)
        if started is not None:
            estimate = estimate.remaining(snapshot.now - started)
        return estimate.expected, estimate.basis

    db = snapshot.db
    wanted: list[tuple[str | None, str]] = [(job.id, job.queue) for job in snapshot.extra_jobs]
    if not extra_only:
        rows = np.flatnonzero(db.cols["state"][: len(db.ids)] == QUEUED)
        names = db.queue_names
        queued = zip(rows.tolist(), db.cols["queue"][rows].tolist(), strict=True)
        wanted = [(db.ids[row], names[queue]) for row, queue in queued] + wanted
    waiting_for = [job_id for job_id, _ in wanted] if extra_only else None
    simulated = simulate(snapshot, runtime, horizon, waiting_for=waiting_for)
    calibration = calibration or Calibration()
    by_queue: dict[str, list[str]] = {}
    out: dict[str, JobForecast] = {}
    for job_id, queue in wanted:
        assert job_id is not None
        if job_id in simulated.rejected:
            out[job_id] = JobForecast(None, None, None, "never", rejected=simulated.rejected[job_id])
        elif job_id not in simulated.starts:
            out[job_id] = JobForecast(None, None, None, "not within the horizon")
        else:
            by_queue.setdefault(queue, []).append(job_id)
    for queue, job_ids in by_queue.items():
        starts = [simulated.starts[job_id] for job_id in job_ids]
        expected, low, high = calibration.apply(snapshot.now, np.asarray(starts), queue)
        basis = simulated.basis
        for job_id, start, e, lo, hi in zip(
            job_ids, starts, expected.tolist(), low.tolist(), high.tolist(), strict=True
        ):
            out[job_id] = JobForecast(e, lo, hi, basis[job_id], simulated=start)
    return out


def _end_due(db: JobDb, jobs: _Jobs, t: float) -> int | None:
    """Remove the runs that end by ``t``; the index of their runtimes' most common basis
    (``None`` if none ended)."""
    due = np.flatnonzero(jobs.end_at <= t)
    if not len(due):
        return None
    jobs.end_at[due] = math.inf
    ended = []
    for i in due.tolist():
        job_id = jobs.ids[i]
        # A preempted job left the copy already.
        if job_id in db and db.state(job_id) == RUNNING:
            db.remove(job_id)
            ended.append(i)
    if not ended:
        return None
    return int(np.bincount(jobs.basis[ended]).argmax())


def _frozen() -> float:
    return 0.0
