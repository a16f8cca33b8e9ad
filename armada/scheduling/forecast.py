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

import enum
import functools
import gc
import operator
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import ParamSpec, TypeVar, cast

import msgspec
import numpy as np
import numpy.typing as npt

from armada.scheduling.arrivals import original_id
from armada.scheduling.calibration import Calibration
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.decisions import SchedulingResult
from armada.scheduling.jobdb import QUEUED, JobDb
from armada.scheduling.queues import QueueSpec
from armada.scheduling.replay import Forward, IntArray, Runtimes, run_forward
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.runtimes import RuntimeEstimate
from armada.scheduling.state import SchedulerState

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Default horizon: seven days. Jobs not started by then are "not within the horizon".
DEFAULT_HORIZON = 7 * 24 * 3600.0
#: Events closer than this fraction of the time already simulated are merged into one step.
COARSENING = 0.05
#: What makes two runtime estimates the same.
_FIELDS = operator.attrgetter("expected", "low", "high", "basis")
#: With draws, jobs run for one of this many quantiles of their runtime distribution.
QUANTILES = 1024
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
    """One forward run: for each watched job, its simulated start (NaN: none) and the basis of
    that start; the jobs rejected."""

    job_ids: list[str]
    start: FloatArray
    basis: npt.NDArray[np.object_]
    rejected: dict[str, str] = field(default_factory=dict)
    cycles: int = 0

    @property
    def starts(self) -> dict[str, float]:
        """The start of each job that started."""
        began = np.flatnonzero(~np.isnan(self.start)).tolist()
        return dict(zip([self.job_ids[i] for i in began], self.start[began].tolist(), strict=True))


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
    runtime: Runtimes,
    horizon: float = DEFAULT_HORIZON,
) -> Simulation:
    """Run the scheduling core forward from ``snapshot`` until every queued job, the
    ``extra_jobs`` included, has started or ``horizon`` seconds have passed.

    ``runtime(job_ids)`` gives the seconds each job runs (for a running job: the seconds
    *left* from ``snapshot.now``) and the basis of that figure, reported for the jobs that
    start when it ends. It is asked once per job, when the job first runs.
    """
    db = snapshot.db.copy()
    if snapshot.extra_jobs:
        db.add_many(snapshot.extra_jobs)
    watched = np.flatnonzero(db.cols["state"][: len(db.ids)] == QUEUED)
    watcher = _StartWatcher(watched, db)
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
    that of the job that ended on its node in the same step, else the step's most common.

    Jobs are matched by their ``seq`` (unique, and kept when the db renumbers its rows), found
    in the sorted ``seq`` of the waiting jobs: no per-job lookups."""

    def __init__(self, rows: IntArray, db: JobDb) -> None:
        seq = db.cols["seq"][rows]
        self._order = np.argsort(seq)
        self._seq = seq[self._order]
        self.waiting = np.ones(len(rows), dtype=bool)
        self.remaining = len(rows)
        self.result = Simulation(db.ids_of(rows), np.full(len(rows), np.nan), np.full(len(rows), None))
        self.freed_by = ROOM_NOW
        self._bases: Counter[str] = Counter()
        #: Per node row: the basis of the job that ended on it last, and when.
        self._node_basis = np.full(db.nodes.size, None)
        self._node_at = np.full(db.nodes.size, np.nan)
        self._at: float | None = None

    def _watched(self, db: JobDb, rows: IntArray) -> tuple[IntArray, BoolArray]:
        """For each of ``rows``, its index among the waiting jobs and whether it is one."""
        if not len(self._seq):
            return np.zeros(len(rows), dtype=np.int64), np.zeros(len(rows), dtype=bool)
        seq = db.cols["seq"][rows]
        at = np.minimum(np.searchsorted(self._seq, seq), len(self._seq) - 1)
        return self._order[at], self._seq[at] == seq

    def cycle(self, t: float, result: SchedulingResult, db: JobDb) -> None:
        on_node = bool(self._bases) and self._at == t
        if on_node:
            self.freed_by = self._bases.most_common(1)[0][0]
        self._bases.clear()
        leases = result.leases
        index, hit = self._watched(db, np.array(leases.rows, dtype=np.int64))
        hit &= self.waiting[index]
        index = index[hit]
        self.waiting[index] = False
        self.remaining -= len(index)
        self.result.start[index] = t
        nodes = np.array(leases.nodes, dtype=np.int64)[hit]
        basis = np.full(len(index), self.freed_by, dtype=object)
        if on_node and len(nodes):
            self._cover(nodes)
            freed = self._node_at[nodes] == t
            basis[freed] = self._node_basis[nodes[freed]]
        self.result.basis[index] = basis
        for rejection in result.rejections:
            (watched,), (found,) = self._watched(db, np.array([db.row(rejection.job_id)]))
            if found and self.waiting[watched]:
                self.waiting[watched] = False
                self.remaining -= 1
                self.result.rejected[rejection.job_id] = rejection.reason

    def ended(self, t: float, rows: IntArray, bases: Sequence[str], db: JobDb) -> None:
        if "" in bases:  # ends without a basis (probes, which run for no time) make no room
            kept = [i for i, basis in enumerate(bases) if basis]
            rows, bases = rows[kept], [bases[i] for i in kept]
        nodes = db.cols["node"][rows]  # running jobs: all on a node
        if self._at != t:
            self._bases.clear()
            self._at = t
        self._bases.update(bases)
        if len(nodes):
            self._cover(nodes)
        # The last job to end on a node gives it its basis.
        last = len(nodes) - 1 - np.unique(nodes[::-1], return_index=True)[1]
        self._node_basis[nodes[last]] = np.array(bases, dtype=object)[last]
        self._node_at[nodes[last]] = t

    def _cover(self, nodes: IntArray) -> None:
        """Grow the per-node arrays to hold ``nodes`` (nodes may join in a timeline)."""
        more = int(nodes.max()) + 1 - len(self._node_at)
        if more > 0:
            self._node_basis = np.concatenate([self._node_basis, np.full(more, None)])
            self._node_at = np.concatenate([self._node_at, np.full(more, np.nan)])

    def left(self, t: float, job_id: str, running: bool, why: str) -> None:
        """Forecasts have no cancellations or node changes in their timeline."""

    def done(self) -> bool:
        return not self.remaining


class Draws(enum.Enum):
    """Which jobs a forecast runs for their own draw rather than their mean runtime.

    On the benchmark (docs/forecast.md) drawing the running jobs' ends fixed the lateness of
    near starts (the first of many ends comes well before their mean) and kept coverage;
    drawing the queued jobs too made later starts early."""

    NONE = "none"
    #: The jobs running at the snapshot (their ends decide the next starts): the default.
    RUNNING = "running"
    ALL = "all"


def quantile_of(job_id: str) -> float:
    """The quantile of its runtime distribution a job runs for with draws: fixed by its id (so
    that a refresh tells the same story as the last), one of :data:`QUANTILES` evenly spread."""
    return (zlib.crc32(job_id.encode()) % QUANTILES + 0.5) / QUANTILES


@_collector_paused
def forecast(
    snapshot: ForecastSnapshot,
    estimates: Mapping[str, RuntimeEstimate],
    default: RuntimeEstimate,
    horizon: float = DEFAULT_HORIZON,
    *,
    calibration: Calibration | None = None,
    draws: Draws = Draws.RUNNING,
) -> dict[str, JobForecast]:
    """Expected start and ``[low, high]`` range of every queued job (and ``extra_jobs``).

    ``estimates`` holds each job's total runtime; the simulation runs each job for its mean
    (:meth:`RuntimeEstimate.mean`: a queue waits on the sum of the runtimes ahead of it),
    a running job for its mean time left given its elapsed time; the jobs ``draws`` names
    (:class:`Draws`; by default the running ones) for their own draw instead
    (:meth:`RuntimeEstimate.draw` at a quantile fixed by the job's id: :func:`quantile_of`),
    so that the first of many ends comes as early as it would. Extrapolated arrivals
    take their original's; jobs without one get ``default``. One simulation with the
    expected runtimes gives each job's simulated start, the expected start; ``calibration``
    (its prior factors if ``None``) gives the range around it.
    """

    started, now = snapshot.started, snapshot.now
    #: An estimate's fields (with draws, and the job's quantile) -> what a job not yet running
    #: runs for, and its basis: jobs share estimates (a job set's), worked out once each.
    unstarted: dict[Hashable, tuple[float, str]] = {}

    def runtimes(job_ids: list[str]) -> tuple[Sequence[float], Sequence[str]]:
        given = list(map(estimates.get, job_ids))
        found = cast(list[RuntimeEstimate], given)  # unless some job has none: then rebuilt
        if not all(given):  # ``None in given`` would call each estimate's ``__eq__``
            found = [e or estimates.get(original_id(j), default) for e, j in zip(given, job_ids, strict=True)]
        fields: list[Hashable] = list(map(_FIELDS, found))
        if draws is Draws.ALL:
            buckets = [zlib.crc32(job_id.encode()) % QUANTILES for job_id in job_ids]
            fields = list(zip(fields, buckets, strict=True))
        runs = list(map(unstarted.get, fields))
        if not all(runs):  # estimates not seen before: worked out once each
            for i in [i for i, run in enumerate(runs) if run is None]:
                run = unstarted.get(fields[i])
                if run is None:
                    drawn = draws is Draws.ALL
                    run_for = found[i].draw(quantile_of(job_ids[i])) if drawn else found[i].mean()
                    run = unstarted[fields[i]] = (run_for, found[i].basis)  # not run yet: not re-estimated
                runs[i] = run
        for i in [i for i, at in enumerate(map(started.get, job_ids)) if at is not None] if started else ():
            elapsed = now - started[job_ids[i]]
            if draws is Draws.NONE:
                left = found[i].mean(elapsed)
            else:
                left = found[i].draw(quantile_of(job_ids[i]), elapsed)
            runs[i] = (left, found[i].basis_after(elapsed))
        seconds, bases = zip(*runs, strict=True) if runs else ((), ())
        return seconds, bases

    db, extra = snapshot.db, snapshot.extra_jobs
    rows = np.flatnonzero(db.cols["state"][: len(db.ids)] == QUEUED)
    index = {name: i for i, name in enumerate(db.queue_names)}
    extra_queues = [index.setdefault(job.queue, len(index)) for job in extra]
    queue = np.concatenate([db.cols["queue"][rows], np.array(extra_queues, dtype=np.int64)])
    names = list(index)
    simulated = simulate(snapshot, runtimes, horizon)
    job_ids = simulated.job_ids  # the queued jobs in row order, then the extra ones: as ``queue``
    calibration = calibration or Calibration()
    out: dict[str, JobForecast] = {}
    began = ~np.isnan(simulated.start)
    for job_id in [job_ids[i] for i in np.flatnonzero(~began).tolist()]:
        if job_id in simulated.rejected:
            out[job_id] = JobForecast(None, None, None, "never", rejected=simulated.rejected[job_id])
        else:
            out[job_id] = JobForecast(None, None, None, "not within the horizon")
    first = np.unique(queue[began], return_index=True)
    for q in first[0][np.argsort(first[1])].tolist():  # queues in the order their first job came
        at = np.flatnonzero(began & (queue == q))
        of_queue = [job_ids[i] for i in at.tolist()]
        expected, low, high = calibration.apply(snapshot.now, simulated.start[at], names[q])
        out.update(
            zip(
                of_queue,
                map(
                    JobForecast,
                    expected.tolist(),
                    low.tolist(),
                    high.tolist(),
                    simulated.basis[at].tolist(),
                    repeat(""),
                    simulated.start[at].tolist(),
                ),
                strict=True,
            )
        )
    return out
