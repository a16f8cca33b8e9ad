"""``bench/forecast.py --ensemble K``: an (approximately) Bayes-ideal forecaster, the bound on
what a forecaster knowing only what a server knows can reach on this workload (issue 40).

Bench side only. At each forecast time, ``K`` forward runs of the real core
(:func:`~armada.scheduling.forecast.simulate`), each with

* the runtimes of the jobs already submitted: their true ones (``--oracle``), else one draw
  from their posterior given what a server knows (each job set's hint, its finished runs, its
  running members' elapsed time) and the workload's generative model
  (:mod:`bench.forecast_workload`): a grid posterior over the set's log-median, then each
  member's runtime around that median, a running member's conditioned on its elapsed time;
* future arrivals (``--future``): ``generator`` draws them afresh from the workload's own
  process (Poisson job sets up to the workload's end; the preemptible burst only with
  ``--future-burst``); ``true`` takes the jobs that will in fact arrive (their runtimes drawn
  from the prior and their hint, unless ``--oracle``); ``none`` adds none.

Each draw has its own generator, seeded from (seed, time, draw). A job's forecast is the
median of its ``K`` simulated starts (not started within ``--ensemble-horizon``: +inf), or
another point of them (``--ensemble-point``, :func:`ensemble_point`); its range their min and
max (nominally a ``(K - 1) / (K + 1)`` interval).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from armada.scheduling import SchedulerState, SchedulingConfig
from armada.scheduling.forecast import ForecastSnapshot, simulate
from armada.scheduling.queues import QueueSpec
from armada.scheduling.replay import Runtimes
from bench.forecast_workload import (
    BURST_MEDIAN,
    BURST_SET,
    BURST_SIGMA,
    CLIP,
    HINT_SIGMA,
    SET_MEDIAN,
    SET_SIGMA,
    WITHIN_SIGMA,
    Job,
    burst,
    job_set,
    set_rate,
)

if TYPE_CHECKING:
    from bench.forecast import Replay

FloatArray = npt.NDArray[np.float64]
#: The grid of a job set's log-median: the generator's clip, in steps of 0.025.
GRID = np.linspace(math.log(CLIP[0]), math.log(CLIP[1]), 248)
_STEP = float(GRID[1] - GRID[0])
_NORMAL = NormalDist()


def _prior() -> FloatArray:
    """Log prior mass of each grid cell: the clipped lognormal, its clipped tails on the ends."""
    edges = [(GRID[i] + GRID[i + 1]) / 2 for i in range(len(GRID) - 1)]
    cdf = [0.0, *(_NORMAL.cdf((e - math.log(SET_MEDIAN)) / SET_SIGMA) for e in edges), 1.0]
    return np.log(np.maximum(np.diff(cdf), 1e-300))


PRIOR = _prior()


def log_survival(z: FloatArray) -> FloatArray:
    """``log P(Z > z)`` of a standard normal, accurate far in either tail (Numerical
    Recipes' ``erfcc``: relative error under 1.2e-7)."""
    x = np.abs(z) / math.sqrt(2)
    t = 1 / (1 + 0.5 * x)
    coefficients = [0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806]
    coefficients += [0.09678418, 0.37409196, 1.00002368, -1.26551223]
    poly = np.zeros_like(t)
    for c in coefficients:
        poly = poly * t + c
    log_erfc = np.log(t) - x * x + poly  # of |z| / sqrt(2)
    upper = math.log(0.5) + log_erfc
    return np.where(z >= 0, upper, np.log1p(-np.exp(upper)))


class SetPosterior:
    """What a server knows of one job set's median runtime, as a grid posterior (or exact,
    once a gang member has finished: gang members run exactly the median)."""

    def __init__(self, hint: float | None, gang: bool) -> None:
        self.gang = gang
        self.log_weight = PRIOR.copy()
        self.exact: float | None = None
        if hint is not None:
            self.log_weight -= (math.log(hint) - GRID) ** 2 / (2 * HINT_SIGMA**2)

    def finished(self, seconds: float) -> None:
        if self.gang:
            self.exact = seconds
        else:
            self.log_weight -= (math.log(seconds) - GRID) ** 2 / (2 * WITHIN_SIGMA**2)

    def running(self, elapsed: float) -> None:
        """A member has run ``elapsed`` seconds and goes on (censored)."""
        if elapsed <= 0:
            return
        if self.gang:
            self.log_weight = np.where(math.log(elapsed) < GRID, self.log_weight, -np.inf)
        else:
            self.log_weight += log_survival((math.log(elapsed) - GRID) / WITHIN_SIGMA)

    def draw(self, rng: np.random.Generator) -> float:
        """One median from the posterior."""
        if self.exact is not None:
            return self.exact
        top = float(self.log_weight.max())
        if top == -np.inf:  # ran past the prior's support (8 h): just past now
            return CLIP[1]
        weight = np.exp(self.log_weight - top)
        cell = int(rng.choice(len(GRID), p=weight / weight.sum()))
        return math.exp(GRID[cell] + rng.uniform(-_STEP / 2, _STEP / 2))


def runtime_left(median: float, sigma: float, elapsed: float, rng: np.random.Generator) -> float:
    """Seconds left of a runtime lognormal(``median``, ``sigma``), given it ran ``elapsed``
    (sigma 0: exactly the median, at least a second left if that is past)."""
    if sigma == 0:
        return median if elapsed <= 0 else max(1.0, median - elapsed)
    if elapsed <= 0:
        return median * math.exp(sigma * float(rng.standard_normal()))
    survival = _NORMAL.cdf(-(math.log(elapsed / median)) / sigma)
    if survival <= 0.0:
        return 1.0
    # The upper tail beyond ``elapsed`` by its inverse: P(Z > x) = u, u uniform in (0, survival].
    x = -_NORMAL.inv_cdf(min(survival * (1.0 - float(rng.random())), 1.0 - 1e-16))
    return max(0.0, median * math.exp(sigma * x) - elapsed)


def _given(left: dict[str, float]) -> Runtimes:
    """The simulation's runtimes: those drawn, ``left``."""

    def runtimes(job_ids: list[str]) -> tuple[list[float], list[str]]:
        return [left[job_id] for job_id in job_ids], ["ideal"] * len(job_ids)

    return runtimes


#: The issue's goal for the median relative error (``--ensemble-point within``).
GOAL = 0.2


def ensemble_point(starts: Sequence[float], now: float, point: str) -> float:
    """The forecast from sorted simulated ``starts`` (``inf``: none), by ``point``:

    * ``median``: their median;
    * ``weighted``: their median weighted by ``1 / lead``, which minimises the expected
      relative error ``|forecast - actual| / (actual - now)`` (an infinite start weighs nothing);
    * ``within``: the start within :data:`GOAL` relative error of the most of them (the middle
      of where that is true), which maximises the chance of an error under the goal: the median
      error is under the goal if and only if more than half the forecasts are.
    """
    if point == "median":
        return starts[(len(starts) - 1) // 2]
    if point == "weighted":
        weights = [1.0 / max(1.0, start - now) for start in starts]
        half, total = sum(weights) / 2, 0.0
        for start, weight in zip(starts, weights, strict=True):
            total += weight
            if total >= half:
                return start
        return starts[-1]
    leads = [max(1.0, start - now) for start in starts if math.isfinite(start)]
    if not leads:
        return math.inf
    # A lead L is within GOAL of a lead l if (1 - GOAL) l <= L <= (1 + GOAL) l.
    best: list[float] = []
    for low in ((1 - GOAL) * lead for lead in leads):
        covered = [lead for lead in leads if (1 - GOAL) * lead <= low <= (1 + GOAL) * lead]
        if len(covered) > len(best):
            best = covered
    low, high = (1 - GOAL) * max(best), (1 + GOAL) * min(best)
    return now + (low + high) / 2


class Ideal:
    """The ensemble forecaster of one replay (its arguments: ``--ensemble``, ``--future``,
    ``--future-burst``, ``--ensemble-horizon``, ``--oracle``)."""

    def __init__(self, replay: Replay, queues: Sequence[QueueSpec], config: SchedulingConfig) -> None:
        self.replay = replay
        self.queues = queues
        self.config = config
        #: Job set -> its members, in submission order (followed as jobs arrive).
        self.members: dict[str, list[str]] = defaultdict(list)
        self._seen = 0

    def forecast(self, t: float, state: SchedulerState) -> dict[str, list[float]]:
        """Each queued job's ``K`` simulated starts, sorted (``inf``: not within the horizon)."""
        replay, args = self.replay, self.replay.args
        self._follow()
        live = [job_id for job_id in replay.db.ids if job_id is not None]
        running = {job_id: replay.started[job_id] for job_id in live if job_id in replay.started}
        horizon = args.ensemble_horizon
        true_future = (
            [(at, job) for at, jobs in replay.future if t < at < t + horizon for job in jobs]
            if args.future == "true"
            else []
        )
        posteriors = {} if args.oracle else self._posteriors(t, live, true_future)
        starts: dict[str, list[float]] = defaultdict(list)
        for k in range(args.ensemble):
            rng = np.random.default_rng([replay.seed, round(t), k])
            future = true_future
            if args.future == "generator":
                future = self._drawn(t, k, random.Random(f"{replay.seed}/{t}/{k}"))
            medians = {name: p.draw(rng) for name, p in posteriors.items()}
            left: dict[str, float] = {}
            for job_id in live:
                elapsed = t - running[job_id] if job_id in running else 0.0
                left[job_id] = self._left(replay.jobs[job_id], elapsed, medians, rng)
            for _, job in future:
                drawn = args.future == "generator" or args.oracle
                left[job.requirements.id] = job.runtime if drawn else self._left(job, 0.0, medians, rng)
            snapshot = ForecastSnapshot(
                db=replay.db,
                queues=self.queues,
                config=self.config,
                state=state,
                now=t,
                started=running,
                arrivals=[(at, job.requirements) for at, job in future],
                coarsening=args.coarsening,
            )
            simulation = simulate(snapshot, _given(left), horizon)
            for job_id, start in zip(simulation.job_ids, simulation.start.tolist(), strict=True):
                starts[job_id].append(math.inf if math.isnan(start) else start)
        return {job_id: sorted(samples) for job_id, samples in starts.items()}

    def _follow(self) -> None:
        jobs = self.replay.jobs
        for job_id in list(jobs)[self._seen :]:
            self.members[jobs[job_id].job_set].append(job_id)
        self._seen = len(jobs)

    def _posteriors(
        self, t: float, live: list[str], future: list[tuple[float, Job]]
    ) -> dict[str, SetPosterior]:
        """The posterior of the median of each job set with a job live or to come."""
        replay = self.replay
        out: dict[str, SetPosterior] = {}
        for job in [replay.jobs[job_id] for job_id in live] + [job for _, job in future]:
            name = job.job_set
            if name in out or name == BURST_SET:
                continue
            posterior = out[name] = SetPosterior(job.hint, bool(job.requirements.gang_id))
            for member in self.members.get(name, ()):
                began = replay.started.get(member)
                if began is None:
                    continue
                if member in replay.db:
                    posterior.running(t - began)
                else:
                    posterior.finished(replay.jobs[member].runtime)
        return out

    def _left(self, job: Job, elapsed: float, medians: dict[str, float], rng: np.random.Generator) -> float:
        """One draw of the seconds ``job`` has left after ``elapsed`` (true with ``--oracle``)."""
        if self.replay.args.oracle:
            return job.runtime - elapsed
        if job.job_set == BURST_SET:
            return runtime_left(BURST_MEDIAN, BURST_SIGMA, elapsed, rng)
        sigma = 0.0 if job.requirements.gang_id else WITHIN_SIGMA
        return runtime_left(medians[job.job_set], sigma, elapsed, rng)

    def _drawn(self, t: float, k: int, rng: random.Random) -> list[tuple[float, Job]]:
        """A fresh future from the workload's process: job sets from ``t`` (Poisson: memoryless)
        to the workload's end or the horizon; the burst if ``--future-burst`` and still to come."""
        replay, args = self.replay, self.replay.args
        end = min(t + args.ensemble_horizon, (args.warmup + args.hours) * 3600)
        rate = set_rate(args.load, args.nodes * 16, true_work=args.true_load)
        out: list[tuple[float, Job]] = []
        at, number = t + rng.expovariate(rate), 1
        while at < end:
            out.extend((at, job) for job in job_set(rng, f"f{k}-", number, at))
            at, number = at + rng.expovariate(rate), number + 1
        if args.future_burst and t < replay.burst_at < end:
            out.extend(
                (replay.burst_at, job) for job in burst(rng, f"f{k}-", args.nodes * 4, replay.burst_at)
            )
            out.sort(key=lambda pair: pair[0])
        return out
