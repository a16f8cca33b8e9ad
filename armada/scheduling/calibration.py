"""Calibration of forecasts against the starts they foretold.

The engine's simulated start cannot see jobs not yet submitted, so far-ahead forecasts are
early by a margin that depends on the workload. :class:`Calibration` learns that margin
from past forecasts: for each forecast made at ``made`` with simulated start ``s`` of a
job that later started at ``a``, the ratio ``(a - made) / (s - made)`` of the real lead
to the simulated lead, kept per band of simulated lead (a bounded window of recent
ratios). A new forecast's lead is multiplied by the band's best factor for the expected
start, and by its ratios' 10th and 90th percentile for the ``[low, high]`` range, so that
about 80% of starts fall inside it whatever the workload.

Until a band has :data:`MIN_RATIOS` ratios, the :data:`PRIOR` factors are used (measured
on ``bench/forecast.py``'s workload).
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field

import numpy as np

#: Upper bounds (seconds of simulated lead) of the bands ratios are kept per.
BANDS = (300.0, 1200.0, 3600.0, 4 * 3600.0, float("inf"))
#: The range's quantiles of the ratios: about 80% of starts inside it.
RANGE_QUANTILES = (0.1, 0.9)
#: Ratios a band needs before its own factors replace :data:`PRIOR`.
MIN_RATIOS = 30
#: Ratios kept per band (the most recent).
WINDOW = 1000
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


@dataclass
class Calibration:
    """Recent real/simulated lead ratios per band, and the factors they give."""

    window: int = WINDOW
    _ratios: list[deque[float]] = field(init=False)
    _factors: list[Factors | None] = field(init=False)

    def __post_init__(self) -> None:
        self._ratios = [deque(maxlen=self.window) for _ in BANDS]
        self._factors = [None for _ in BANDS]

    def observe(self, simulated_lead: float, actual_lead: float) -> None:
        """A forecast of ``simulated_lead`` seconds ahead came true ``actual_lead`` seconds
        after it was made."""
        lead = max(MIN_LEAD, simulated_lead)
        band = _band(lead)
        self._ratios[band].append(max(MIN_LEAD, actual_lead) / lead)
        self._factors[band] = None

    def factors(self, simulated_lead: float) -> Factors:
        """The factors for a forecast ``simulated_lead`` seconds ahead."""
        band = _band(max(MIN_LEAD, simulated_lead))
        found = self._factors[band]
        if found is None:
            found = self._factors[band] = _fit(self._ratios[band])
        return found

    def apply(self, now: float, start: float) -> tuple[float, float, float]:
        """``(expected, low, high)`` for a simulated start ``start`` made at ``now`` (a start
        in the next cycle stays there)."""
        lead = max(0.0, start - now)
        f = self.factors(lead)
        return now + f.expected * lead, now + f.low * lead, now + f.high * lead


def _band(lead: float) -> int:
    return bisect.bisect_left(BANDS, lead)


def _fit(ratios: deque[float]) -> Factors:
    """The factor minimising the median relative error over ``ratios``, and their range."""
    if len(ratios) < MIN_RATIOS:
        return Factors(*PRIOR, ratios=0)
    r = np.asarray(ratios)
    candidates = np.quantile(r, np.linspace(0.05, 0.95, 37))
    # Relative error of factor m on a forecast whose ratio is r: |m - r| / r.
    errors = np.median(np.abs(candidates[:, None] - r[None, :]) / r[None, :], axis=1)
    low, high = np.quantile(r, RANGE_QUANTILES)
    best = float(candidates[int(np.argmin(errors))])
    return Factors(best, min(float(low), best), max(float(high), best), ratios=len(r))
