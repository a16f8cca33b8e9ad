"""Exponential back-off with full jitter, so that many executors do not retry in step."""

from __future__ import annotations

import random


class Backoff:
    """Delays ``uniform(initial/2, min(cap, initial * 2**failures))``; ``reset`` on success."""

    def __init__(self, initial: float, cap: float, rng: random.Random | None = None) -> None:
        self._initial = initial
        self._cap = cap
        self._failures = 0
        self._rng = rng or random.Random()

    @property
    def failures(self) -> int:
        """Failures since the last success."""
        return self._failures

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt; counts one more failure."""
        ceiling = min(self._cap, self._initial * 2 ** min(self._failures, 32))
        self._failures += 1
        return self._rng.uniform(min(ceiling, self._initial / 2), ceiling)

    def reset(self) -> None:
        """Forget past failures."""
        self._failures = 0
