"""The backends' ``RunObserver``: passes what they see to the run tracker and carries out
the instructions its transitions return (report, kill, clean up)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from armada.executor.backend import RunStatus
from armada.executor.tracker import CleanUp, Instruction, Kill, KillReason, Report, RunTracker
from armada.model.leases import RunEvent


class TrackingObserver:
    """Implements ``RunObserver`` over a :class:`RunTracker`."""

    def __init__(
        self,
        tracker: RunTracker,
        *,
        put: Callable[[RunEvent], Awaitable[None]],
        clean_up: Callable[[str, bool], Awaitable[None]],
        kill: Callable[[str, KillReason], None],
        offer: Callable[[RunEvent], bool] | None = None,
    ) -> None:
        self.tracker = tracker
        self._put = put
        #: Hands an event over at once if that needs no waiting (False: it would wait), so
        #: that most events skip the task ``asyncio.shield`` makes around ``put``.
        self._offer = offer
        self._clean_up = clean_up
        self._kill = kill

    def holds(self, run_id: str) -> bool:
        return self.tracker.holds(run_id)

    async def observe(self, status: RunStatus) -> None:
        await self.execute(self.tracker.observe(status))

    async def gone(self, run_id: str) -> None:
        await self.execute(self.tracker.gone(run_id))

    async def execute(self, instructions: Iterable[Instruction]) -> None:
        """Carry out ``instructions`` in order; reporting may wait while the buffer is full."""
        for instruction in instructions:
            match instruction:
                case Report(event):
                    if self._offer is None or not self._offer(event):
                        # Shielded: the transition is made, so a caller cancelled here (a watch
                        # renewed, a shutdown) would otherwise lose the event for ever.
                        await asyncio.shield(self._put(event))
                case Kill(run_id, why):
                    self._kill(run_id, why)
                case CleanUp(run_id, discard):
                    await self._clean_up(run_id, discard)
