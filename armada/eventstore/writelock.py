"""The in-process append lock, with a fast lane for writes that others wait on.

Appends are serialised; under load the queue for the lock is where a write spends most
of its time. The scheduler's decisions are what every queued job is waiting for, so they
take the fast lane and overtake queued submissions and run reports (which keep their
order among themselves).
"""

from __future__ import annotations

import asyncio
from collections import deque


class WriteLock:
    """A FIFO lock whose ``urgent`` acquirers are served before the others."""

    def __init__(self) -> None:
        self._locked = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._normal: deque[asyncio.Future[None]] = deque()

    def locked(self) -> bool:
        return self._locked

    async def acquire(self, *, urgent: bool = False) -> None:
        if not self._locked:
            self._locked = True
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._normal
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed the lock just as we were cancelled: pass it on
            else:
                queue.remove(waiter)
            raise

    def release(self) -> None:
        """Hand the lock to the next waiter (urgent first), or unlock."""
        for queue in (self._urgent, self._normal):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self._locked = False
