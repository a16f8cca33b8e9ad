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

:func:`forecast` runs one simulation with every job's expected runtime and reports for
each queued job the simulated start, with a ``[low, high]`` range from a
:class:`~armada.scheduling.calibration.Calibration` learned from past forecasts.
"""

from __future__ import annotations

import functools
import gc
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import ParamSpec, TypeVar

import msgspec
import numpy as np

from armada.scheduling.arrivals import original_id
from armada.scheduling.calibration import Calibration
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
COARSENING = 0.05
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


class JobForecast(msgspec.Struct, frozen=True, array_like=True):
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


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _collector_paused(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` with Python's cyclic garbage collector paused while it runs (if it ran).

    A simulation allocates hundreds of thousands of short-lived containers, all freed by
    reference counting, and every so many allocations the collector walks every object of
    the process: ~0.3 s of a 1.8 s refresh of 100,000 queued jobs, more in a server.
    """

    @functools.wraps(function)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused


@_collector_paused
def simulate(
    snapshot: ForecastSnapshot,
    runtime: Callable[[str], tuple[float, str]],
    horizon: float = DEFAULT_HORIZON,
    *,
    waiting_for: Collection[str] | None = None,
) -> Simulation:
    """Run the scheduling core forward from ``snapshot`` until every queued job (or every
    one of ``waiting_for``) has started or ``horizon`` seconds have passed.

    ``runtime(job_id)`` gives the seconds a job runs (for a running job: the seconds *left*
    from ``snapshot.now``) and the basis of that figure, reported for the jobs that start
    when it ends. It is asked once per job, when the job first runs.
    """
    db = snapshot.db.copy()
    if snapshot.extra_jobs:
        db.add_many(snapshot.extra_jobs)
    if waiting_for is None:
        n = len(db.ids)
        waiting_for = db.ids_of(np.flatnonzero(db.cols["state"][:n] == QUEUED))
    watcher = _StartWatcher(set(waiting_for), db)
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
    """Records when each waiting job starts, and the basis of the ends that made room for it:
    that of the job that ended on its node in the same step, else the step's most common."""

    def __init__(self, waiting: set[str], db: JobDb) -> None:
        self.waiting = waiting
        self.db = db
        self.result = Simulation()
        self.freed_by = ROOM_NOW
        self._bases: Counter[str] = Counter()
        #: Node -> the basis of a job that ended on it at :attr:`_at`.
        self._on_node: dict[str, str] = {}
        self._at: float | None = None

    def cycle(self, t: float, result: SchedulingResult, db: JobDb) -> None:
        on_node: dict[str, str] = {}
        if self._bases and self._at == t:
            self.freed_by = self._bases.most_common(1)[0][0]
            on_node = self._on_node
        self._bases.clear()
        waiting, leases = self.waiting, result.leases
        job_ids, node_ids = leases.job_ids, leases.node_ids
        if not waiting.issuperset(job_ids):  # some leased job is not watched: drop it
            pairs = [(j, n) for j, n in zip(job_ids, node_ids, strict=True) if j in waiting]
            job_ids, node_ids = [j for j, _ in pairs], [n for _, n in pairs]
        waiting.difference_update(job_ids)
        self.result.starts.update(dict.fromkeys(job_ids, t))
        self.result.basis.update(zip(job_ids, map(on_node.get, node_ids, repeat(self.freed_by)), strict=True))
        for rejection in result.rejections:
            if rejection.job_id in waiting:
                waiting.discard(rejection.job_id)
                self.result.rejected[rejection.job_id] = rejection.reason

    def ended(self, t: float, job_ids: Sequence[str], bases: Sequence[str]) -> None:
        if self._at != t:
            self._bases.clear()
            self._on_node = {}
            self._at = t
        self._bases.update(bases)
        names = self.db.nodes.ids
        nodes = self.db.cols["node"][self.db.rows_of(job_ids)].tolist()  # running jobs: all on a node
        self._on_node.update(zip([names[node] for node in nodes], bases, strict=True))

    def left(self, t: float, job_id: str, running: bool, why: str) -> None:
        """Forecasts have no cancellations or node changes in their timeline."""

    def done(self) -> bool:
        return not self.waiting


@_collector_paused
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

    ``estimates`` holds each job's total runtime; the simulation runs each job for its mean
    (:meth:`RuntimeEstimate.mean`: a queue waits on the sum of the runtimes ahead of it),
    a running job for its mean time left given its elapsed time. Extrapolated arrivals
    take their original's; jobs without one get ``default``. One simulation with the
    expected runtimes gives each job's simulated start, the expected start; ``calibration``
    (its prior factors if ``None``) gives the range around it. With
    ``extra_only``, only ``extra_jobs`` are forecast (the simulation ends once they start).
    """

    started = snapshot.started

    def runtime(job_id: str) -> tuple[float, str]:
        estimate = estimates.get(job_id) or estimates.get(original_id(job_id), default)
        at = started.get(job_id) if started else None
        elapsed = 0.0 if at is None else snapshot.now - at
        return estimate.mean(elapsed), estimate.basis_after(elapsed)

    db, extra = snapshot.db, snapshot.extra_jobs
    rows = np.zeros(0, dtype=np.int64)
    if not extra_only:
        rows = np.flatnonzero(db.cols["state"][: len(db.ids)] == QUEUED)
    job_ids = db.ids_of(rows) + [job.id for job in extra]
    index = {name: i for i, name in enumerate(db.queue_names)}
    extra_queues = [index.setdefault(job.queue, len(index)) for job in extra]
    queue = np.concatenate([db.cols["queue"][rows], np.array(extra_queues, dtype=np.int64)])
    names = list(index)
    simulated = simulate(snapshot, runtime, horizon, waiting_for=job_ids)
    calibration = calibration or Calibration()
    starts, basis = simulated.starts, simulated.basis
    out: dict[str, JobForecast] = {}
    began = np.fromiter(map(starts.__contains__, job_ids), dtype=bool, count=len(job_ids))
    for job_id in [job_ids[i] for i in np.flatnonzero(~began).tolist()]:
        if job_id in simulated.rejected:
            out[job_id] = JobForecast(None, None, None, "never", rejected=simulated.rejected[job_id])
        else:
            out[job_id] = JobForecast(None, None, None, "not within the horizon")
    first = np.unique(queue[began], return_index=True)
    for q in first[0][np.argsort(first[1])].tolist():  # queues in the order their first job came
        of_queue = [job_ids[i] for i in np.flatnonzero(began & (queue == q)).tolist()]
        simulated_starts = list(map(starts.__getitem__, of_queue))
        expected, low, high = calibration.apply(snapshot.now, np.asarray(simulated_starts), names[q])
        out.update(
            zip(
                of_queue,
                map(
                    JobForecast,
                    expected.tolist(),
                    low.tolist(),
                    high.tolist(),
                    map(basis.__getitem__, of_queue),
                    repeat(""),
                    simulated_starts,
                ),
                strict=True,
            )
        )
    return out
