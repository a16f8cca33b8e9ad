"""The API double's own time: what its watch cache and taint manager measure durations by.

Real time by default. A test moves it on with ``advance`` (a node lost for five minutes,
history older than the watch cache keeps) or runs it faster with ``speed``, instead of
waiting: sleepers wake when the clock passes their time, however it got there.
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class Clock:
    """Seconds since the double started: real time times ``speed``, plus every ``advance``."""

    def __init__(self, speed: float = 1.0) -> None:
        self._speed = speed
        self._real_start = time.monotonic()
        self._at_start = 0.0
        self._moved = asyncio.Event()

    def now(self) -> float:
        return self._at_start + (time.monotonic() - self._real_start) * self._speed

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, speed: float) -> None:
        self._at_start, self._real_start, self._speed = self.now(), time.monotonic(), speed
        self._wake()

    def advance(self, seconds: float) -> None:
        """Jump ``seconds`` ahead, waking whoever sleeps until then."""
        self._at_start += seconds
        self._wake()

    async def sleep_until(self, at: float) -> None:
        while (left := at - self.now()) > 0:
            moved = self._moved
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left / self._speed):
                    await moved.wait()

    def _wake(self) -> None:
        self._moved.set()
        self._moved = asyncio.Event()
