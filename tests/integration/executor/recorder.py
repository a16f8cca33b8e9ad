"""A ``RunObserver`` that records what a backend reports, for backend tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from armada.executor.backend import RunStatus
from armada.model.leases import TERMINAL_KINDS


class Recorder:
    def __init__(self) -> None:
        self.statuses: list[RunStatus] = []
        self.gone_runs: list[str] = []
        self.held: set[str] = set()
        self._changed = asyncio.Condition()

    async def observe(self, status: RunStatus) -> None:
        async with self._changed:
            self.statuses.append(status)
            self._changed.notify_all()

    async def gone(self, run_id: str) -> None:
        async with self._changed:
            self.gone_runs.append(run_id)
            self._changed.notify_all()

    def holds(self, run_id: str) -> bool:
        return run_id in self.held

    def kinds(self, run_id: str) -> list[str]:
        return [s.kind for s in self.statuses if s.run_id == run_id]

    def final(self, run_id: str) -> RunStatus:
        return next(s for s in reversed(self.statuses) if s.run_id == run_id and s.kind in TERMINAL_KINDS)

    def finished(self, *run_ids: str) -> bool:
        return all(any(k in TERMINAL_KINDS for k in self.kinds(r)) for r in run_ids)

    async def wait_for(self, predicate: Callable[[], bool], within: float = 120.0) -> None:
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(predicate)
