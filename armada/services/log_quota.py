"""Caps on log reads, per caller and per executor (on this replica): so many waiting at
once, and so many per second per caller.

A log read holds a request, a mailbox row and, once answered, up to
``scheduler.maxLogBytes`` of lines: without a cap, one caller asking many times at once for
a chatty job's log multiplied that until the server ran out of memory and every other
caller waited. Even one read at a time, asked again the moment it is answered, kept the
event loop busy enough to slow everyone's calls (two answers of 256 KiB are ~60 reads a
second): the per-caller rate bounds that, well above what Lookout (a read every 2 s) or
``armada logs --follow`` (every second) ask. A read past a cap is refused before anything
is posted; a waiting slot is given back when the read ends, however it ends.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from armada.model.errors import LimitExceeded

#: Seconds a refused caller is told to wait: a log read usually ends well within it.
RETRY_AFTER = 2


class InFlight:
    """Counts what each key has in flight; refuses a key at ``limit``."""

    def __init__(self, limit: int, setting: str) -> None:
        self.limit = limit
        self.setting = setting
        self._held: dict[str, int] = {}

    @contextmanager
    def hold(self, key: str, who: str) -> Iterator[None]:
        """One slot of ``key``'s for the ``with`` block; :class:`LimitExceeded` at the cap."""
        if self._held.get(key, 0) >= self.limit:
            raise LimitExceeded(
                f"{who} already has {self.limit} log reads waiting ({self.setting}); "
                f"try again in {RETRY_AFTER} s",
                retry_after=RETRY_AFTER,
            )
        self._held[key] = self._held.get(key, 0) + 1
        try:
            yield
        finally:
            if (left := self._held.pop(key) - 1) > 0:
                self._held[key] = left


class Rate:
    """A token bucket per key: ``per_second`` on average, ``burst`` at once."""

    #: Buckets kept before full ones are dropped (a full bucket is as good as none).
    MAX_KEYS = 10_000

    def __init__(
        self, per_second: float, burst: int, setting: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_second = per_second
        self.burst = burst
        self.setting = setting
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)

    def take(self, key: str, who: str) -> None:
        """Count one read of ``key``'s; :class:`LimitExceeded` if its bucket is empty."""
        now = self.clock()
        tokens = self._tokens(key, now)
        if tokens < 1:
            wait = max(1, math.ceil((1 - tokens) / self.per_second))
            raise LimitExceeded(
                f"{who} reads logs faster than {self.per_second:g} a second ({self.setting}); "
                f"try again in {wait} s",
                retry_after=wait,
            )
        if len(self._buckets) >= self.MAX_KEYS:
            self._buckets = {k: v for k, v in self._buckets.items() if self._tokens(k, now) < self.burst}
        self._buckets[key] = (tokens - 1, now)

    def _tokens(self, key: str, now: float) -> float:
        tokens, then = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - then) * self.per_second)
