"""The in-process append lock, with lanes for the writes others wait on.

Appends are serialised; under load the queue for the lock is where a write spends most
of its time. Three lanes say who goes first when the lock (or a group's turn, see
:mod:`.group`) is handed on:

- ``URGENT``: the scheduler's decisions, which every queued job is waiting for;
- ``PROMPT``: small writes a client is waiting on (submissions of at most 100 jobs), which
  overtake
- ``BULK``: everything else (run reports, expiry, bigger submissions, queue changes, ...).

Within a group the next turn goes to the first lane, of those the group still takes, that
has a waiter (see :meth:`.group.AppendGroup.narrow`). A new group (the
lock released after a commit) starts with an urgent waiter if there is one, else with a
prompt one, so that a client's write waits for at most the group being committed; but
when the previous group started with a prompt writer while bulk ones waited, this one
starts with the bulk lane (prompt writers join it at the next turn), so a steady stream
of prompt writers cannot starve the bulk lane. Order within a lane is FIFO. The lock also
counts how long it has been held: its busy fraction says whether appends are the bottleneck.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Collection
from enum import IntEnum


class Lane(IntEnum):
    """Who is handed the lock first: the lower, the sooner."""

    URGENT = 0
    PROMPT = 1
    BULK = 2


class WriteLock:
    """A lock whose waiters are served by :class:`Lane`, FIFO within one.

    ``on_abandoned`` runs when the lock was handed to a waiter that was cancelled before it
    could run; by default it passes the lock on (the group commit passes its turn on).
    """

    def __init__(self, on_abandoned: Callable[[], None] | None = None) -> None:
        self._locked = False
        self._lanes: dict[Lane, deque[asyncio.Future[None]]] = {lane: deque() for lane in Lane}
        #: The last group started with a prompt writer although bulk ones waited.
        self._bulk_passed_over = False
        self._on_abandoned = on_abandoned or self.release
        self._busy = 0.0
        self._since = 0.0

    def locked(self) -> bool:
        return self._locked

    def waiting(self, lane: Lane) -> int:
        """How many writers wait in ``lane`` (cancelled ones not yet skipped included)."""
        return len(self._lanes[lane])

    @property
    def busy_seconds(self) -> float:
        """Seconds the lock has been held since it was created, the current hold included."""
        return self._busy + (time.monotonic() - self._since if self._locked else 0.0)

    async def acquire(self, lane: Lane = Lane.BULK) -> None:
        if not self._locked:
            self._locked = True
            self._since = time.monotonic()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._lanes[lane]
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._on_abandoned()  # handed the lock just as we were cancelled: pass it on
            elif waiter in queue:  # (a cancelled waiter may have been dropped from it already)
                queue.remove(waiter)
            raise

    def has_waiters(self) -> bool:
        """Whether a writer (not cancelled) waits in any lane."""
        return any(self._has_live(lane) for lane in Lane)

    def hand_off(self, lanes: Collection[Lane] = tuple(Lane)) -> bool:
        """Hand the lock to the next live waiter of ``lanes``, by lane; ``False`` if there is none."""
        return any(self._wake(lane) for lane in Lane if lane in lanes)

    def release(self) -> None:
        """Hand the lock to the next group's first writer (urgent, else prompt, but bulk
        after a prompt-first group passed it over), or unlock."""
        if self._wake(Lane.URGENT):
            return
        bulk_waits = self._has_live(Lane.BULK)
        prompt_first = not (self._bulk_passed_over and bulk_waits)
        if prompt_first and self._wake(Lane.PROMPT):
            self._bulk_passed_over = bulk_waits
            return
        self._bulk_passed_over = False
        if self._wake(Lane.BULK):
            return
        self._locked = False
        self._busy += time.monotonic() - self._since

    def _has_live(self, lane: Lane) -> bool:
        """Whether ``lane`` has a waiter not cancelled (cancelled ones before it are dropped)."""
        queue = self._lanes[lane]
        while queue and queue[0].done():
            queue.popleft()
        return bool(queue)

    def _wake(self, lane: Lane) -> bool:
        if not self._has_live(lane):
            return False
        self._lanes[lane].popleft().set_result(None)
        return True
