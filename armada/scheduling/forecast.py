"""Forecasts: when queued jobs will start, by running the real scheduling core forward.

Not a second scheduler: :func:`simulate` copies the job db and runs the loop every
simulation shares (:func:`armada.scheduling.replay.run_forward`: the real ``schedule()`` and
``apply_decisions()`` cycle after cycle) on the copy, watching when each queued job starts.
Between cycles simulated time jumps to the next event, the expected end of a running job
(or one cycle period on, while a cycle is still placing jobs: rate limits, lease caps),
and the jobs due by then are removed from the copy. Fair share evolves as it does live:
the usage history is carried from cycle to cycle at simulated time; gangs, urgency,
preemption, limits, pools and cordons come from the core itself.

What is not simulated: jobs not yet submitted (beyond those the caller adds), failures
and retries (a preempted job leaves), executors joining or leaving. Far ahead, events are
merged into steps of :data:`COARSENING` of the time already simulated, so a week-long
forecast costs tens of cycles, not one per job end.

:func:`forecast` runs three simulations, with every job's expected, low and high runtime,
and reports for each queued job the expected start and the ``[low, high]`` range.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec
import numpy as np

from armada.scheduling.arrivals import original_id
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.decisions import SchedulingResult
from armada.scheduling.jobdb import QUEUED, JobDb
from armada.scheduling.queues import QueueSpec
from armada.scheduling.replay import Forward, run_forward
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.runtimes import RuntimeEstimate
from armada.scheduling.state import SchedulerState

#: Default horizon: seven days. Jobs not started by then are "not within the horizon".
DEFAULT_HORIZON = 7 * 24 * 3600.0
#: Events closer than this fraction of the time already simulated are merged into one step.
COARSENING = 0.02
#: The range's simulations merge events this many times more coarsely (a range needs less
#: precision than the expected start; it halves their cost).
RANGE_COARSENING = 3.0
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
) -> Simulation:
    """Run the scheduling core forward from ``snapshot`` until every queued job has started
    or ``horizon`` seconds have passed.

    ``runtime(job_id)`` gives the seconds a job runs (for a running job: the seconds *left*
    from ``snapshot.now``) and the basis of that figure, reported for the jobs that start
    when it ends.
    """
    db = snapshot.db.copy()
    if snapshot.extra_jobs:
        db.add_many(snapshot.extra_jobs)
    n = len(db.ids)
    waiting = {db.ids[r] for r in np.flatnonzero(db.cols["state"][:n] == QUEUED).tolist()}
    waiting |= {job.id for job in snapshot.extra_jobs}
    watcher = _StartWatcher(waiting)  # type: ignore[arg-type]  # queued rows always have ids
    forward = Forward(
        db=db,
        queues=snapshot.queues,
        config=snapshot.config,
        state=snapshot.state,
        runtime=runtime,
        timeline=snapshot.arrivals,
        paused_executors=snapshot.paused_executors,
        cycle_period=snapshot.cycle_period,
        coarsening=snapshot.coarsening,
    )
    watcher.result.cycles = run_forward(forward, snapshot.now, snapshot.now + horizon, watcher)
    return watcher.result


class _StartWatcher:
    """Records when each waiting job starts, and the basis of the ends that made room for it."""

    def __init__(self, waiting: set[str]) -> None:
        self.waiting = waiting
        self.result = Simulation()
        self.freed_by = ROOM_NOW
        self._bases: Counter[str] = Counter()
        self._at: float | None = None

    def cycle(self, t: float, result: SchedulingResult, db: JobDb) -> None:
        if self._bases and self._at == t:
            self.freed_by = self._bases.most_common(1)[0][0]
        self._bases.clear()
        waiting, starts, basis = self.waiting, self.result.starts, self.result.basis
        for job_id in result.leases.job_ids:
            if job_id in waiting:
                waiting.discard(job_id)
                starts[job_id] = t
                basis[job_id] = self.freed_by
        for rejection in result.rejections:
            if rejection.job_id in waiting:
                waiting.discard(rejection.job_id)
                self.result.rejected[rejection.job_id] = rejection.reason

    def ended(self, t: float, job_id: str, basis: str) -> None:
        if self._at != t:
            self._bases.clear()
            self._at = t
        self._bases[basis] += 1

    def left(self, t: float, job_id: str, running: bool, why: str) -> None:
        """Forecasts have no cancellations or node changes in their timeline."""

    def done(self) -> bool:
        return not self.waiting


def forecast(
    snapshot: ForecastSnapshot,
    estimates: Mapping[str, RuntimeEstimate],
    default: RuntimeEstimate,
    horizon: float = DEFAULT_HORIZON,
) -> dict[str, JobForecast]:
    """Expected start and ``[low, high]`` range of every queued job (and ``extra_jobs``).

    ``estimates`` holds each job's total runtime; running jobs' remaining time is derived
    from their elapsed time (:meth:`RuntimeEstimate.remaining`). Extrapolated arrivals
    take their original's; jobs without one get ``default``. The range comes from
    simulating with every runtime at its low and at its high value.
    """

    def runtimes(pick: Callable[[RuntimeEstimate], float]) -> Callable[[str], tuple[float, str]]:
        def runtime(job_id: str) -> tuple[float, str]:
            estimate = estimates.get(job_id) or estimates.get(original_id(job_id), default)
            started = snapshot.started.get(job_id)
            if started is not None:
                estimate = estimate.remaining(snapshot.now - started)
            return pick(estimate), estimate.basis

        return runtime

    expected = simulate(snapshot, runtimes(lambda e: e.expected), horizon)
    coarser = dataclasses.replace(snapshot, coarsening=snapshot.coarsening * RANGE_COARSENING)
    early = simulate(coarser, runtimes(lambda e: e.low), horizon)
    late = simulate(coarser, runtimes(lambda e: e.high), horizon)
    n = len(snapshot.db.ids)
    queued = [snapshot.db.ids[r] for r in np.flatnonzero(snapshot.db.cols["state"][:n] == QUEUED).tolist()]
    out: dict[str, JobForecast] = {}
    for job_id in [*queued, *(job.id for job in snapshot.extra_jobs)]:
        assert job_id is not None
        if job_id in expected.rejected:
            out[job_id] = JobForecast(None, None, None, "never", rejected=expected.rejected[job_id])
            continue
        start = expected.starts.get(job_id)
        found = [s for s in (start, early.starts.get(job_id), late.starts.get(job_id)) if s is not None]
        low = min(found, default=None)
        high = None if late.starts.get(job_id) is None or start is None else max(found)
        basis = expected.basis.get(job_id, "not within the horizon")
        out[job_id] = JobForecast(start, low, high, basis)
    return out
