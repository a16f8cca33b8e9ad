"""A job set's runtime as a hierarchical lognormal, learned from everything known of the set.

The log-runtimes of a job set's jobs are normal around the set's log-median ``m`` with a
*within-set* spread ``sigma_w`` (pooled over the job sets with two or more finished runs:
:class:`PooledSpread`). ``m`` itself has a prior from the set's queue and shape: the log of
the median of that key's runs, with a *between-set* spread (the key's spread less the
within-set one), or the configured default. Then evidence updates it:

1. the job's hint, read as a measurement of ``m`` with the hint's own spread;
2. the set's finished runs: their median, a measurement of ``m`` with spread ``sigma_w /
   sqrt(n)`` (the median rather than the mean: one hung run moves it by one place);
3. the set's *running* members as censored runs: each is known to run longer than its
   elapsed time. Siblings running long pull ``m`` up: a set's first finished runs are its
   shortest (survivorship), so the finished runs alone are short.

The first two are normal (closed form); with censored runs near the plausible ``m`` the
posterior is read off a grid of :data:`GRID` points. The estimate is the posterior
predictive of one job: its median, and 10th and 90th percentiles that hold both the
uncertainty of ``m`` and the within-set spread.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from armada.scheduling.runtimes import (
    DEFAULT_SPREAD,
    HINT_SPREAD,
    RuntimeEstimate,
    RuntimeHistory,
)

FloatArray = npt.NDArray[np.float64]

_Z90 = NormalDist().inv_cdf(0.9)
#: The spread (sigma of the log) of a hint and of the default, from their 10th-90th percentile factors.
HINT_SIGMA = math.log(HINT_SPREAD[1] / HINT_SPREAD[0]) / (2 * _Z90)
DEFAULT_SIGMA = math.log(DEFAULT_SPREAD[1] / DEFAULT_SPREAD[0]) / (2 * _Z90)
#: Within-set spread until enough sets have finished two runs (jobs of one set are alike: their
#: 10th-90th percentiles x0.68-x1.47 of its median); never below the floor (a set of identical
#: runs would otherwise make one run an exact prediction).
WITHIN_DEFAULT = 0.3
WITHIN_FLOOR = 0.1
#: A run farther than this many pooled spreads from its set's earlier runs adds only that far
#: to the pool: one hung job does not widen every set.
WINSOR = 3.0
#: Between-set spread of a queue and shape is at least this: its window may hold few sets.
BETWEEN_FLOOR = 0.5
#: A queue and shape's runs give the prior once it has this many.
MIN_SAMPLES = 3
#: Points of the grid over ``m`` when censored runs matter, and the most censored runs read
#: (more are summarised by this many evenly spread order statistics, weighted); grids are
#: worked out this many job sets at a time.
GRID = 100
MAX_CENSORED = 16
BATCH = 256
#: Running members are named in the basis once they raise the median by 5% or more.
NEWS = math.log(1.05)


class PooledSpread:
    """The within-set variance of log-runtimes pooled over job sets, fading so that it follows
    the recent sets: each run of a set that has finished runs before adds its squared distance
    from their mean (Welford's increment, at most :data:`WINSOR` spreads) and a degree of
    freedom."""

    def __init__(self, memory: float = 1000.0, min_dof: float = 10.0) -> None:
        self._keep = 1.0 - 1.0 / memory
        self.min_dof = min_dof
        self._squares = 0.0
        self._dof = 0.0

    def add(self, earlier: Sequence[float], seconds: float) -> None:
        """One run of ``seconds`` of a set whose earlier finished runs are ``earlier``."""
        if not earlier:
            return
        n = len(earlier)
        mean = sum(_log(s) for s in earlier) / n
        distance = min(abs(_log(seconds) - mean), WINSOR * (self.sigma or WITHIN_DEFAULT))
        self._squares = self._squares * self._keep + n / (n + 1) * distance**2
        self._dof = self._dof * self._keep + 1.0

    @property
    def sigma(self) -> float | None:
        """The pooled within-set spread, ``None`` until enough runs are pooled."""
        if self._dof < self.min_dof:
            return None
        return math.sqrt(self._squares / self._dof)


@dataclass(frozen=True, slots=True)
class Prior:
    """What is believed of a job set's log-median ``m`` before its own evidence."""

    log_median: float
    #: Between-set spread: the prior's sigma of ``m``.
    between: float
    #: Within-set spread of one job's log-runtime around ``m``.
    within: float
    basis: str
    #: False for the configured default: a placeholder, which a hint or a finished run replaces.
    informative: bool = True


def prior(shape_runs: Sequence[float], within: float | None, default: float) -> Prior:
    """The prior of a job set of a queue and shape whose recent runs are ``shape_runs``
    (:data:`MIN_SAMPLES` or more, else the ``default`` runtime and spread), with the pooled
    within-set spread ``within`` (``None``: :data:`WITHIN_DEFAULT`)."""
    sigma_w = max(WITHIN_FLOOR, WITHIN_DEFAULT if within is None else within)
    if len(shape_runs) >= MIN_SAMPLES:
        ordered = sorted(shape_runs)
        p10, p50, p90 = (_quantile(ordered, q) for q in (0.1, 0.5, 0.9))
        total = math.log(max(p90, 1.0) / max(p10, 1.0)) / (2 * _Z90)
        basis = f"learned from {len(ordered)} runs of its queue and shape"
        center = _log(p50)
    else:
        total, basis, center = DEFAULT_SIGMA, "default", _log(default)
    between = math.sqrt(max(BETWEEN_FLOOR**2, total * total - sigma_w * sigma_w))
    return Prior(center, between, sigma_w, basis, informative=basis != "default")


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one estimate is made from: the job set's prior, the job's hint and deadline, the
    set's finished runtimes and its running members' elapsed seconds."""

    prior: Prior
    hint: float | None = None
    finished: Sequence[float] = ()
    running: Sequence[float] = ()
    deadline: float | None = None


def estimate_runtime(evidence: Evidence) -> RuntimeEstimate:
    """One job's runtime estimate (:func:`estimate_runtimes`)."""
    return estimate_runtimes([evidence])[0]


def estimate_runtimes(asked: Sequence[Evidence]) -> list[RuntimeEstimate]:
    """Each job's runtime estimate from its :class:`Evidence`, bounded above by its
    ``activeDeadlineSeconds``. The grids of those with censored runs that matter are worked
    out together, a few hundred at a time: one refresh asks for thousands."""
    normals = [_normal(evidence) for evidence in asked]
    censored = [
        _censored(evidence.running, mean, sd, evidence.prior.within)
        for evidence, (mean, sd, _) in zip(asked, normals, strict=True)
    ]
    quantiles = [(mean - _Z90 * sd, mean, mean + _Z90 * sd) for mean, sd, _ in normals]
    gridded = [i for i, (runs, _) in enumerate(censored) if runs]
    for start in range(0, len(gridded), BATCH):
        rows = gridded[start : start + BATCH]
        found = _posteriors(
            [normals[i][:2] for i in rows], [asked[i].prior.within for i in rows], [censored[i] for i in rows]
        )
        for i, row in zip(rows, found, strict=True):
            quantiles[i] = row
    out = []
    for evidence, (mean, _, weights), (les, each), (m10, m50, m90) in zip(
        asked, normals, censored, quantiles, strict=True
    ):
        sigma_w = evidence.prior.within
        low = math.exp(m50 - _Z90 * math.hypot((m50 - m10) / _Z90, sigma_w))
        high = math.exp(m50 + _Z90 * math.hypot((m90 - m50) / _Z90, sigma_w))
        counted = round(len(les) * each) if m50 - mean > NEWS else 0
        basis = _basis(evidence, weights, counted)
        estimate = RuntimeEstimate(math.exp(m50), low, high, basis)
        deadline = evidence.deadline
        if deadline is not None and deadline > 0:
            estimate = estimate.capped(deadline, f"{estimate.basis}, bounded by activeDeadlineSeconds")
        out.append(estimate)
    return out


def _normal(evidence: Evidence) -> tuple[float, float, dict[str, tuple[float, float]]]:
    """Mean and sigma of ``m`` given the prior, the hint and the finished runs (all normal),
    and each of those as (precision, centre)."""
    prior, finished = evidence.prior, evidence.finished
    weights = {"prior": (1.0 / prior.between**2, prior.log_median)}
    if evidence.hint is not None:
        weights["hint"] = (1.0 / HINT_SIGMA**2, _log(evidence.hint))
    if finished:  # by their median: one hung run moves it by one place
        weights["set"] = (len(finished) / prior.within**2, _log(_quantile(sorted(finished), 0.5)))
    if not prior.informative and len(weights) > 1:
        del weights["prior"]
    precision = sum(weight for weight, _ in weights.values())
    mean = sum(weight * centre for weight, centre in weights.values()) / precision
    return mean, 1.0 / math.sqrt(precision), weights


def _censored(running: Sequence[float], mean: float, sd: float, sigma_w: float) -> tuple[list[float], float]:
    """The log elapsed times of the running members that can move ``m`` (those far below its
    plausible values, just started, cannot), at most :data:`MAX_CENSORED` evenly spread order
    statistics, and how many members each stands for."""
    floor = mean - 3 * sd - 4 * sigma_w
    censored = sorted(le for le in map(_log, running) if le > floor)
    if len(censored) <= MAX_CENSORED:
        return censored, 1.0
    step = (len(censored) - 1) / (MAX_CENSORED - 1)
    return [censored[round(k * step)] for k in range(MAX_CENSORED)], len(censored) / MAX_CENSORED


def _posteriors(
    normals: Sequence[tuple[float, float]],
    within: Sequence[float],
    censored: Sequence[tuple[list[float], float]],
) -> list[tuple[float, float, float]]:
    """10th, 50th and 90th percentiles of each ``m``: normal ``(mean, sd)`` times the
    likelihood of each censored run (a log elapsed time ``le``) lasting longer, ``Phi((m - le)
    / sigma_w)``, to the power of the members each stands for; on a grid of :data:`GRID` points
    from 4 sigmas below the mean to 4 above (or 3 within-set spreads above the longest)."""
    mean, sd = (np.array(column) for column in zip(*normals, strict=True))
    sigma_w = np.array(within)
    width = max(len(les) for les, _ in censored)
    runs = np.repeat(mean[:, None], width, axis=1)  # padding, of weight 0
    weight = np.zeros((len(censored), width))
    for row, (les, count) in enumerate(censored):
        runs[row, : len(les)] = les
        weight[row, : len(les)] = count
    bottom = mean - 4 * sd
    top = np.maximum(mean + 4 * sd, runs.max(axis=1) + 3 * sigma_w)
    grid = bottom[:, None] + (top - bottom)[:, None] * np.linspace(0.0, 1.0, GRID)[None, :]
    log_post = -0.5 * ((grid - mean[:, None]) / sd[:, None]) ** 2
    z = (grid[:, :, None] - runs[:, None, :]) / sigma_w[:, None, None]
    log_post += (weight[:, None, :] * _log_ndtr(z)).sum(axis=2)
    density = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    cdf = np.zeros_like(density)
    cdf[:, 1:] = np.cumsum(density[:, 1:] + density[:, :-1], axis=1)  # trapezoids
    cdf /= cdf[:, -1:]
    out = []
    for q in (0.1, 0.5, 0.9):  # linear between the grid points either side of q
        above = np.clip((cdf < q).sum(axis=1), 1, GRID - 1)[:, None]
        c0, c1 = np.take_along_axis(cdf, above - 1, 1), np.take_along_axis(cdf, above, 1)
        g0, g1 = np.take_along_axis(grid, above - 1, 1), np.take_along_axis(grid, above, 1)
        out.append((g0 + (g1 - g0) * (q - c0) / np.maximum(c1 - c0, 1e-300))[:, 0])
    return list(zip(*(column.tolist() for column in out), strict=True))


#: ``P(t)``'s coefficients, lowest power first.
_ERFCC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
          0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277)  # fmt: skip


def _log_ndtr(x: FloatArray) -> FloatArray:
    """``log Phi(x)``, elementwise, accurate far into the lower tail (erfc after Numerical
    Recipes' ``erfcc``: ``erfc(z) = t exp(-z^2 + P(t))``, fractional error under 1.2e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.full_like(t, _ERFCC[-1])
    for coefficient in reversed(_ERFCC[:-1]):  # Horner
        poly = coefficient + t * poly
    log_half_erfc = np.log(0.5 * t) - z * z + poly  # log Phi(-|x|)
    return np.where(x < 0, log_half_erfc, np.log1p(-np.exp(log_half_erfc)))


def _basis(evidence: Evidence, weights: dict[str, tuple[float, float]], running: int) -> str:
    """Names the evidence that weighs most (precision), then the set's runs beside it: its
    finished runs, and the ``running`` members that raised it (by :data:`NEWS` or more)."""
    main = max(weights, key=lambda name: weights[name][0])
    finished = evidence.finished
    if main == "set":
        still = f" ({running} still running)" if running else ""
        with_hint = " and its hint" if evidence.hint is not None else ""
        return f"learned from {len(finished)} runs of its job set{still}{with_hint}"
    named = "hint" if main == "hint" else evidence.prior.basis
    seen = [f"{len(finished)} finished"] if finished else []
    seen += [f"{running} running"] if running else []
    return f"{named} ({', '.join(seen)} in its set)" if seen else named


def _log(seconds: float) -> float:
    return math.log(max(1.0, seconds))


def _quantile(ordered: list[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


class LearnedRuntimes:
    """Finished runtimes per job set and per queue and shape (bounded windows), the pooled
    within-set spread, and the estimates they give: what the server's learner and the
    benchmark share."""

    def __init__(self, default: float, window: int = 64, max_keys: int = 20_000) -> None:
        self.default = default
        self.sets = RuntimeHistory(window, max_keys)
        self.shapes = RuntimeHistory(window, max_keys)
        self.within = PooledSpread()
        #: Each queue and shape's prior, until the next run is recorded.
        self._priors: dict[Hashable, Prior] = {}

    def record(self, job_set: Hashable, shape: Hashable | None, seconds: float) -> None:
        """A run of ``seconds`` that succeeded, of ``job_set`` and (if known) ``shape``."""
        self.within.add(self.sets.runs(job_set), seconds)
        self._priors.clear()
        self.sets.record(job_set, seconds)
        if shape is not None:
            self.shapes.record(shape, seconds)

    def evidence(
        self,
        *,
        hint: float | None,
        job_set: Hashable,
        shape: Hashable | None,
        running: Sequence[float],
        deadline: float | None,
    ) -> Evidence:
        """What the estimate of a job of ``job_set`` and ``shape`` (``None``: unknown) rests on,
        whose set's running members have run ``running`` seconds (:func:`estimate_runtimes`)."""
        belief = self._priors.get(shape)
        if belief is None:
            shape_runs = self.shapes.runs(shape) if shape is not None else ()
            belief = self._priors[shape] = prior(shape_runs, self.within.sigma, self.default)
        return Evidence(belief, hint, tuple(self.sets.runs(job_set)), running, deadline)
