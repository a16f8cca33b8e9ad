"""Runtime estimates for forecasts: what a job's runtime is believed to be, and why.

A :class:`RuntimeEstimate` is a lognormal (its median, 10th and 90th percentiles) with the
basis it rests on, which a simulation reads as a mean, a draw, or what is left of a running
job. Estimates are made by :mod:`.runtime_model` from the job's hint annotation, its
``activeDeadlineSeconds`` and the runs kept in a :class:`RuntimeHistory` (a bounded window
per key: one job that ran for a week is one run of 64, its weight in a median one place).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from armada.model.durations import parse_duration

#: The hint annotation: the job's expected runtime as a duration (``90s``, ``1h30m``, ``3600``).
EXPECTED_RUNTIME_ANNOTATION = "armadaproject.io/expectedRuntime"

#: Relative spread of a hint: a user's word is good, not exact.
HINT_SPREAD = (0.75, 1.5)
#: Spread of the configured default, which knows nothing of the job.
DEFAULT_SPREAD = (0.25, 4.0)
#: A running job past an exact estimate (``low == high``: no spread to condition on) is
#: re-estimated from its elapsed time ``e``: expected ``1.5 e`` and high ``3 e`` (a job that
#: has run long is likely to run long: heavy tails).
OVERDUE_FACTORS = (1.5, 3.0)
#: ``low`` and ``high`` are read as the 10th and 90th percentiles of a lognormal whose median
#: is ``expected``: they are this many of its sigmas from the median.
_NORMAL = NormalDist()
_Z90 = _NORMAL.inv_cdf(0.9)


def runtime_hint(annotations: Mapping[str, str]) -> float | None:
    """Seconds in the job's :data:`EXPECTED_RUNTIME_ANNOTATION`, ``None`` without one.

    Raises ``ValueError`` for anything but a positive duration (submission refuses it).
    """
    text = annotations.get(EXPECTED_RUNTIME_ANNOTATION)
    if text is None:
        return None
    seconds = parse_duration(text)
    if not 0 < seconds < 10 * 365 * 86400:
        raise ValueError(f"must be a positive duration under 10 years, got {text!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class RuntimeEstimate:
    """Seconds a job is expected to run: ``low <= expected <= high``, and the basis."""

    expected: float
    low: float
    high: float
    basis: str

    def capped(self, bound: float, basis: str) -> RuntimeEstimate:
        """Bounded above by ``bound`` (``activeDeadlineSeconds``: the job is killed by then)."""
        if self.expected <= bound and self.high <= bound:
            return self
        expected = min(self.expected, bound)
        return RuntimeEstimate(expected, min(self.low, expected), min(self.high, bound), basis)

    @property
    def sigma(self) -> float:
        """The spread of the lognormal the estimate describes (0: exact, or not lognormal)."""
        if self.low <= 0 or self.high <= self.low or self.expected <= 0:
            return 0.0
        return math.log(self.high / self.low) / (2 * _Z90)

    def _tail(self, elapsed: float) -> tuple[float, float, float, float] | None:
        """``(mu, sigma, z, survival)`` of the lognormal at ``elapsed`` seconds, ``None``
        where there is none to condition on (exact estimate, or far past every quantile)."""
        sigma = self.sigma
        if sigma == 0.0 or elapsed <= 0:
            return None
        mu = math.log(self.expected)
        z = (math.log(elapsed) - mu) / sigma
        survival = _NORMAL.cdf(-z)
        return (mu, sigma, z, survival) if survival > 1e-12 else None

    def mean(self, elapsed: float = 0.0) -> float:
        """The mean runtime left after ``elapsed`` seconds of running, given it ran that long.

        What a simulation runs a job for: a queued job waits for the ends of many jobs ahead
        of it, whose sum grows with their mean runtime, not their median (a lognormal's mean
        is ``exp(sigma^2 / 2)`` times its median: 1.8 times at the default's spread).
        """
        elapsed = max(0.0, elapsed)
        sigma = self.sigma
        if elapsed == 0.0 and sigma:  # never past ``high``: a deadline kills the job by then
            return min(self.high, self.expected * math.exp(sigma * sigma / 2))
        tail = self._tail(elapsed)
        if tail is None:
            return self.remaining(elapsed).expected
        mu, sigma, z, survival = tail
        # E[T | T > e] = exp(mu + sigma^2 / 2) * Phi(sigma - z) / Phi(-z).
        return max(0.0, math.exp(mu + sigma * sigma / 2) * _NORMAL.cdf(sigma - z) / survival - elapsed)

    def draw(self, u: float, elapsed: float = 0.0) -> float:
        """The runtime left after ``elapsed`` seconds at quantile ``u`` (in (0, 1)) of the
        distribution given it ran that long: ``F^-1(F(e) + u (1 - F(e)))``, less ``e``.

        What a simulation runs one job for when each job takes its own draw (a quantile fixed
        per job) rather than the mean."""
        elapsed = max(0.0, elapsed)
        sigma = self.sigma
        survival = 1.0
        if elapsed > 0:
            tail = self._tail(elapsed)
            if tail is None:
                return self.remaining(elapsed).expected
            survival = tail[3]
        elif not sigma:
            return self.expected
        p = min(1.0 - 1e-12, max(1e-12, 1.0 - survival * (1.0 - u)))
        return max(0.0, self.expected * math.exp(sigma * _NORMAL.inv_cdf(p)) - elapsed)

    def basis_after(self, elapsed: float) -> str:
        """The basis of what is left after ``elapsed`` seconds (re-estimated past the median)."""
        return self.basis if elapsed < self.expected else f"{self.basis}, re-estimated after running longer"

    def remaining(self, elapsed: float) -> RuntimeEstimate:
        """What is left after ``elapsed`` seconds of running.

        A job past its estimate is not "overdue": it is re-estimated given that it has run
        ``elapsed`` seconds. With a spread, from the lognormal conditioned on running longer
        than that (the median and 10th/90th percentiles of what is left, which grow with the
        elapsed time: heavy tails); an exact estimate by :data:`OVERDUE_FACTORS`.
        """
        elapsed = max(0.0, elapsed)
        basis = self.basis_after(elapsed)
        tail = self._tail(elapsed)
        if tail is None:
            expected = self.expected if elapsed < self.expected else OVERDUE_FACTORS[0] * elapsed
            high = max(expected, self.high if elapsed < self.high else OVERDUE_FACTORS[1] * elapsed)
            low = min(expected, max(self.low, elapsed))
            return RuntimeEstimate(expected - elapsed, low - elapsed, high - elapsed, basis)
        mu, sigma, _, survival = tail

        def left(q: float) -> float:  # the q-quantile of T - e given T > e
            return max(0.0, math.exp(mu - sigma * _NORMAL.inv_cdf((1 - q) * survival)) - elapsed)

        return RuntimeEstimate(left(0.5), left(0.1), left(0.9), basis)


class RuntimeHistory:
    """The last ``window`` runtimes of at most ``max_keys`` keys (least recently fed dropped)."""

    def __init__(self, window: int = 64, max_keys: int = 20_000) -> None:
        self.window = window
        self.max_keys = max_keys
        self._runs: OrderedDict[Hashable, deque[float]] = OrderedDict()

    def record(self, key: Hashable, seconds: float) -> None:
        runs = self._runs.get(key)
        if runs is None:
            runs = self._runs[key] = deque(maxlen=self.window)
            if len(self._runs) > self.max_keys:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(key)
        runs.append(max(0.0, seconds))

    def runs(self, key: Hashable) -> Sequence[float]:
        """The runtimes kept for ``key``, oldest first (empty if none)."""
        return self._runs.get(key, ())
