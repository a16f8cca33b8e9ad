"""Failed-login throttling: a bounded number of wrong passwords per client and per user.

Each password check costs scrypt's CPU and memory, and each wrong guess teaches an attacker
something; so failures are counted per client address and per user name in fixed windows,
and once either key reaches the limit further attempts are refused (429 with
``Retry-After``) without checking the password until its window ends. Counting per user
stops a botnet guessing one account; counting per address stops one client trying many.
The table is bounded: expired windows are dropped first, and if a flood of distinct keys
still fills it, it is cleared rather than allowed to grow without end.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

#: Keys remembered at most (addresses and user names together).
MAX_KEYS = 100_000


class LoginThrottled(Exception):
    """Too many failed logins for this client or user; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many failed logins; retry in {retry_after} s")
        self.retry_after = retry_after


class LoginThrottle:
    def __init__(
        self,
        limit: int,
        window_seconds: float,
        *,
        max_keys: int = MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._window = window_seconds
        self._max_keys = max_keys
        self._clock = clock
        #: key -> (start of its window, failures in it)
        self._failures: dict[str, tuple[float, int]] = {}

    def check(self, *keys: str) -> None:
        """Raise :class:`LoginThrottled` if any of ``keys`` has used up its window."""
        now = self._clock()
        wait = 0.0
        for key in keys:
            start, count = self._failures.get(key, (now, 0))
            if count >= self._limit and now < start + self._window:
                wait = max(wait, start + self._window - now)
        if wait > 0:
            raise LoginThrottled(max(1, math.ceil(wait)))

    def failed(self, *keys: str) -> None:
        now = self._clock()
        if len(self._failures) >= self._max_keys:
            self._prune(now)
        for key in keys:
            start, count = self._failures.get(key, (now, 0))
            if now >= start + self._window:
                start, count = now, 0
            self._failures[key] = (start, count + 1)

    def _prune(self, now: float) -> None:
        self._failures = {k: v for k, v in self._failures.items() if now < v[0] + self._window}
        if len(self._failures) >= self._max_keys:
            self._failures.clear()
