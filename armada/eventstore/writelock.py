"""The in-process append lock, with a fast lane for writes that others wait on.

Appends are serialised; under load the queue for the lock is where a write spends most
of its time. The scheduler's decisions are what every queued job is waiting for, so they
take the fast lane and overtake queued submissions and run reports (which keep their
order among themselves). The lock also counts how long it has been held: its busy
fraction says whether appends are the bottleneck.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable


class WriteLock:
    """A FIFO lock whose ``urgent`` acquirers are served before the others.

    ``on_abandoned`` runs when the lock was handed to a waiter that was cancelled before it
    could run; by default it passes the lock on (the group commit passes its turn on).
    """

    def __init__(self, on_abandoned: Callable[[], None] | None = None) -> None:
        self._locked = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._normal: deque[asyncio.Future[None]] = deque()
        self._on_abandoned = on_abandoned or self.release
        self._busy = 0.0
        self._since = 0.0

    def locked(self) -> bool:
        return self._locked

    @property
    def busy_seconds(self) -> float:
        """Seconds the lock has been held since it was created, the current hold included."""
        return self._busy + (time.monotonic() - self._since if self._locked else 0.0)

    async def acquire(self, *, urgent: bool = False) -> None:
        if not self._locked:
            self._locked = True
            self._since = time.monotonic()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._normal
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._on_abandoned()  # handed the lock just as we were cancelled: pass it on
            else:
                queue.remove(waiter)
            raise

    def hand_off(self) -> bool:
        """Hand the lock to the next live waiter (urgent first); ``False`` if there is none."""
        for queue in (self._urgent, self._normal):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return True
        return False

    def release(self) -> None:
        """Hand the lock to the next waiter, or unlock."""
        if not self.hand_off():
            self._locked = False
            self._busy += time.monotonic() - self._since
