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

:func:`forecast` runs three simulations, with every job's expected, low and high runtime,
and reports for each queued job the expected start and the ``[low, high]`` range.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec
import numpy as np

from armada.scheduling.arrivals import original_id
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.jobdb import QUEUED, RUNNING, JobDb
from armada.scheduling.queues import QueueSpec
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.runtimes import RuntimeEstimate
from armada.scheduling.schedule import apply_decisions, schedule
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
    # No time budget (the forecast is off the critical path) and a frozen clock: deterministic.
    config = msgspec.structs.replace(snapshot.config, max_scheduling_duration=0.0)
    now, end = snapshot.now, snapshot.now + horizon
    ends: list[tuple[float, int, str, str]] = []
    n = len(db.ids)
    rows = np.flatnonzero(db.cols["state"][:n] == RUNNING).tolist()
    for row in rows:
        job_id = db.ids[row]
        assert job_id is not None
        left, basis = runtime(job_id)
        ends.append((now + max(0.0, left), row, job_id, basis))
    heapq.heapify(ends)
    waiting = {db.ids[r] for r in np.flatnonzero(db.cols["state"][:n] == QUEUED).tolist()}
    waiting |= {job.id for job in snapshot.extra_jobs}
    result = Simulation()
    state, t = snapshot.state, now
    freed_by = _end_due(db, ends, t) or ROOM_NOW
    arrivals, arrived = snapshot.arrivals, 0
    while waiting and t <= end:
        due = arrived
        while due < len(arrivals) and arrivals[due][0] <= t:
            due += 1
        if due > arrived:
            db.add_many(job for _, job in arrivals[arrived:due])
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
        for lease in cycle.leases:
            job_id = lease.job_id
            if job_id in waiting:
                waiting.discard(job_id)
                result.starts[job_id] = t
                result.basis[job_id] = freed_by
            left, basis = runtime(job_id)
            heapq.heappush(ends, (t + max(0.0, left), db.row(job_id), job_id, basis))
        for rejection in cycle.rejections:
            if rejection.job_id in waiting:
                waiting.discard(rejection.job_id)
                result.rejected[rejection.job_id] = rejection.reason
        apply_decisions(db, cycle)
        step = max(snapshot.cycle_period, (t - now) * snapshot.coarsening)
        following = t + step if len(cycle.leases) else math.inf
        if ends:
            following = min(following, max(ends[0][0], t + step))
        if math.isinf(following):
            break  # nothing runs and nothing was placed: nothing will change
        if arrived < len(arrivals):
            following = min(following, max(arrivals[arrived][0], t + step))
        t = following
        freed_by = _end_due(db, ends, t) or freed_by
    return result


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


def _end_due(db: JobDb, ends: list[tuple[float, int, str, str]], t: float) -> str:
    """Remove the runs that end by ``t``; the most common basis of their runtimes ("" if none)."""
    bases: Counter[str] = Counter()
    while ends and ends[0][0] <= t:
        _, row, job_id, basis = heapq.heappop(ends)
        # A preempted job left the copy already (and a row may since hold another job).
        if job_id in db and db.row(job_id) == row and db.state(job_id) == RUNNING:
            db.remove(job_id)
            bases[basis] += 1
    return bases.most_common(1)[0][0] if bases else ""


def _frozen() -> float:
    return 0.0
