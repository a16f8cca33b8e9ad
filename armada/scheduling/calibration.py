"""Calibration of forecasts' ranges against the starts they foretold.

The engine's simulated start cannot see jobs not yet submitted nor the true runtimes, so
a forecast is off by a margin that depends on the workload. :class:`Calibration` learns
that margin from past forecasts: for each forecast made at ``made`` with simulated start
``s`` of a job that later started at ``a``, the ratio ``(a - made) / (s - made)`` of the
real lead to the simulated lead, kept per band of simulated lead (a bounded window of
recent ratios), for the job's queue and for all queues. The ``[low, high]`` range is the
simulated lead multiplied by the band's 5th and 95th percentile ratio (wider than the 80%
a steady workload would need: the ratios lag a backlog that grows). The expected start is
the simulated one: a factor learned per band lags the workload as the range does (on
the benchmark it gave a median error of 0.49 against 0.44 without it). A
queue's own band is used once it has :data:`MIN_RATIOS` ratios (queues are overtaken by
later arrivals to different degrees: their fair share differs), else the band of all
queues, else the :data:`PRIOR` factors.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Collection
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
#: ``(low, high)`` factors before a band has learned its own.
PRIOR = (0.5, 3.0)


@dataclass(frozen=True, slots=True)
class Factors:
    """Multipliers of a simulated lead: the range's ends."""

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
    """Recent real/simulated lead ratios per queue and band, and the range they give."""

    window: int = WINDOW
    _ratios: dict[tuple[str, int], deque[float]] = field(default_factory=dict)
    _factors: dict[tuple[str, int], Factors] = field(default_factory=dict)
    _queues: set[str] = field(default_factory=set)

    def observe(self, simulated_lead: float, actual_lead: float, queue: str = ALL) -> None:
        """A forecast of ``simulated_lead`` seconds ahead, of a job of ``queue``, came true
        ``actual_lead`` seconds after it was made."""
        lead = max(MIN_LEAD, simulated_lead)
        band = _band(lead)
        ratio = max(MIN_LEAD, actual_lead) / lead
        if queue != ALL and (queue in self._queues or len(self._queues) < MAX_QUEUES):
            self._queues.add(queue)
            self._add((queue, band), ratio)
        self._add((ALL, band), ratio)

    def observed(self, queue: str = ALL) -> int:
        """Ratios kept for ``queue`` (all queues by default), over every band."""
        return sum(len(ratios) for (group, _), ratios in self._ratios.items() if group == queue)

    def _add(self, group: tuple[str, int], ratio: float) -> None:
        self._ratios.setdefault(group, deque(maxlen=self.window)).append(ratio)
        self._factors.pop(group, None)

    def factors(self, simulated_lead: float, queue: str = ALL) -> Factors:
        """The factors for a forecast ``simulated_lead`` seconds ahead of a job of ``queue``."""
        band = _band(max(MIN_LEAD, simulated_lead))
        own = self._fitted((queue, band))
        return own if own.ratios else self._fitted((ALL, band))

    def _fitted(self, group: tuple[str, int]) -> Factors:
        found = self._factors.get(group)
        if found is None:
            found = self._factors[group] = _fit(self._ratios.get(group, ()))
        return found

    def apply(self, now: float, starts: FloatArray, queue: str = ALL) -> tuple[FloatArray, ...]:
        """``(expected, low, high)`` for simulated ``starts`` made at ``now`` of jobs of
        ``queue``: the expected start is the simulated one (a start in the next cycle stays
        there, range and all)."""
        leads = np.maximum(0.0, starts - now)
        bands = np.searchsorted(BANDS, np.maximum(MIN_LEAD, leads))
        per_band = np.array([astuple(self.factors(lead, queue))[:2] for lead in _BAND_LEADS])
        low, high = per_band[bands].T * leads
        return now + leads, now + low, now + high


def _band(lead: float) -> int:
    return bisect.bisect_left(BANDS, lead)


#: A lead inside each band.
_BAND_LEADS = [max(MIN_LEAD, bound / 2) if bound != float("inf") else 1e9 for bound in BANDS]


def _fit(ratios: Collection[float]) -> Factors:
    """The range of ``ratios`` (:data:`RANGE_QUANTILES`), always around the simulated lead."""
    if len(ratios) < MIN_RATIOS:
        return Factors(*PRIOR, ratios=0)
    r = np.fromiter(ratios, dtype=float, count=len(ratios))
    low, high = np.quantile(r, RANGE_QUANTILES)
    return Factors(min(float(low), 1.0), max(float(high), 1.0), ratios=len(r))
