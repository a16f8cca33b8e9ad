"""Calibration of forecasts against the starts they foretold.

The engine's simulated start cannot see jobs not yet submitted, so far-ahead forecasts are
early by a margin that depends on the workload. :class:`Calibration` learns that margin
from past forecasts: for each forecast made at ``made`` with simulated start ``s`` of a
job that later started at ``a``, the ratio ``(a - made) / (s - made)`` of the real lead
to the simulated lead, kept per band of simulated lead (a bounded window of recent
ratios), for the job's queue and for all queues. A new forecast's lead is multiplied by
the band's best factor for the expected start, and by its ratios' 5th and 95th percentile
for the ``[low, high]`` range (wider than the 80% a steady workload would need: the ratios
lag a backlog that grows). A queue's own band is used once it has :data:`MIN_RATIOS`
ratios (queues are overtaken by later arrivals to different degrees: their fair share
differs), else the band of all queues, else the :data:`PRIOR` factors.

Learning only from forecasts that came true would learn from the jobs that started soonest:
while a backlog grows, the late ones are still waiting, and the range would be too early
for them. Forecasts still waiting (:meth:`Calibration.waiting`) count too, as censored
ratios (at least the time waited so far over the simulated lead), through a Kaplan-Meier
estimate of the ratios' distribution.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import astuple, dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Upper bounds (seconds of simulated lead) of the bands ratios are kept per.
BANDS = (300.0, 1200.0, 3600.0, 4 * 3600.0, float("inf"))
#: The range's quantiles of the ratios (at least 80% of starts inside it while the workload drifts).
RANGE_QUANTILES = (0.05, 0.95)
#: Ratios a band needs before its own factors replace :data:`PRIOR`.
MIN_RATIOS = 30
#: Ratios kept per band (the most recent).
WINDOW = 500
#: Leads shorter than this (seconds) count as this: the next cycle is not instantaneous.
MIN_LEAD = 30.0
#: ``(expected, low, high)`` factors before a band has learned its own.
PRIOR = (1.0, 0.5, 3.0)


@dataclass(frozen=True, slots=True)
class Factors:
    """Multipliers of a simulated lead: the expected start's and the range's."""

    expected: float
    low: float
    high: float
    #: Ratios they were learned from (0: :data:`PRIOR`).
    ratios: int


#: The group of every queue's ratios.
ALL = ""
#: Queues whose ratios are kept (the first seen; the rest use :data:`ALL`'s).
MAX_QUEUES = 1000


@dataclass
class Calibration:
    """Recent real/simulated lead ratios per queue and band, and the factors they give."""

    window: int = WINDOW
    _ratios: dict[tuple[str, int], deque[float]] = field(default_factory=dict)
    _factors: dict[tuple[str, int], Factors] = field(default_factory=dict)
    _queues: set[str] = field(default_factory=set)
    #: Ratios' lower bounds of the forecasts still waiting for their job, per group.
    _censored: dict[tuple[str, int], list[float]] = field(default_factory=dict)

    def observe(self, simulated_lead: float, actual_lead: float, queue: str = ALL) -> None:
        """A forecast of ``simulated_lead`` seconds ahead, of a job of ``queue``, came true
        ``actual_lead`` seconds after it was made."""
        for group, ratio in self._groups(simulated_lead, actual_lead, queue):
            self._ratios.setdefault(group, deque(maxlen=self.window)).append(ratio)
            self._factors.pop(group, None)

    def waiting(self, forecasts: Iterable[tuple[float, float, str]]) -> None:
        """The forecasts made whose job has not started yet, as ``(simulated lead, seconds
        waited so far, queue)``: replaces the last call's."""
        self._censored = {}
        for simulated_lead, waited, queue in forecasts:
            for group, ratio in self._groups(simulated_lead, waited, queue):
                self._censored.setdefault(group, []).append(ratio)
        self._factors.clear()

    def _groups(
        self, simulated_lead: float, actual_lead: float, queue: str
    ) -> list[tuple[tuple[str, int], float]]:
        """The groups a forecast counts in (its queue's band, if kept, and all queues'), and its ratio."""
        lead = max(MIN_LEAD, simulated_lead)
        band = _band(lead)
        ratio = max(MIN_LEAD, actual_lead) / lead
        groups = [((ALL, band), ratio)]
        if queue != ALL and (queue in self._queues or len(self._queues) < MAX_QUEUES):
            self._queues.add(queue)
            groups.append(((queue, band), ratio))
        return groups

    def observed(self, queue: str = ALL) -> int:
        """Ratios kept for ``queue`` (all queues by default), over every band."""
        return sum(len(ratios) for (group, _), ratios in self._ratios.items() if group == queue)

    def factors(self, simulated_lead: float, queue: str = ALL) -> Factors:
        """The factors for a forecast ``simulated_lead`` seconds ahead of a job of ``queue``."""
        band = _band(max(MIN_LEAD, simulated_lead))
        own = self._fitted((queue, band))
        return own if own.ratios else self._fitted((ALL, band))

    def _fitted(self, group: tuple[str, int]) -> Factors:
        found = self._factors.get(group)
        if found is None:
            found = self._factors[group] = _fit(self._ratios.get(group, ()), self._censored.get(group, ()))
        return found

    def apply(self, now: float, starts: FloatArray, queue: str = ALL) -> tuple[FloatArray, ...]:
        """``(expected, low, high)`` for simulated ``starts`` made at ``now`` of jobs of
        ``queue`` (a start in the next cycle stays there)."""
        leads = np.maximum(0.0, starts - now)
        bands = np.searchsorted(BANDS, np.maximum(MIN_LEAD, leads))
        per_band = np.array([astuple(self.factors(lead, queue))[:3] for lead in _BAND_LEADS])
        expected, low, high = per_band[bands].T * leads
        return now + expected, now + low, now + high


def _band(lead: float) -> int:
    return bisect.bisect_left(BANDS, lead)


#: A lead inside each band.
_BAND_LEADS = [max(MIN_LEAD, bound / 2) if bound != float("inf") else 1e9 for bound in BANDS]


def _fit(ratios: Collection[float], censored: Collection[float] = ()) -> Factors:
    """The factor minimising the median relative error over the ratios' distribution, and
    its range; ``censored`` ratios are lower bounds (Kaplan-Meier)."""
    if len(ratios) < MIN_RATIOS:
        return Factors(*PRIOR, ratios=0)
    values, mass = _distribution(np.fromiter(ratios, dtype=float), np.fromiter(censored, dtype=float))
    candidates = _quantiles(values, mass, np.linspace(0.05, 0.95, 37))
    # Relative error of factor m on a forecast whose ratio is r: |m - r| / r.
    errors = np.abs(candidates[:, None] - values[None, :]) / values[None, :]
    medians = [_quantiles(row, mass, np.array([0.5]))[0] for row in errors]
    low, high = _quantiles(values, mass, np.array(RANGE_QUANTILES))
    best = float(candidates[int(np.argmin(medians))])
    return Factors(best, min(float(low), best), max(float(high), best), ratios=len(ratios))


def _distribution(ratios: FloatArray, censored: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Kaplan-Meier: ratios and the probability mass at each. What survives the largest
    observed ratio goes to the largest censored one beyond it."""
    values = np.concatenate([ratios, censored])
    events = np.concatenate([np.ones(len(ratios)), np.zeros(len(censored))])
    order = np.lexsort((-events, values))  # at a tie, the start counts before the censoring
    values, events = values[order], events[order]
    at_risk = len(values) - np.arange(len(values))
    survival = np.cumprod(1.0 - events / at_risk)
    mass = np.concatenate([[1.0], survival[:-1]]) - survival
    mass[-1] += survival[-1]
    kept = mass > 0  # censored ratios carry none (but the last): they only shape the others'
    return values[kept], mass[kept]


def _quantiles(values: FloatArray, mass: FloatArray, q: FloatArray) -> FloatArray:
    """Quantiles ``q`` of the distribution putting ``mass`` on ``values``."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(mass[order])
    found: FloatArray = values[order][
        np.minimum(np.searchsorted(cumulative, q * cumulative[-1]), len(values) - 1)
    ]
    return found
