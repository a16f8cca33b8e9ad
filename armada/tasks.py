"""Background work: the start/stop protocol of background services, and stopping a task.

Long-running components (the change listener, the quarantine, the executor's loops, the
server's lifespan) stop their tasks this way; the wait matters, since a task cancelled but
not awaited may still hold a connection, or write, after its owner has been closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol


class Background(Protocol):
    """A service that works in the background: ``start`` creates its task (it returns at
    once), ``stop`` ends it and waits. The server's lifespan lists them
    (:func:`armada.api.lifespan.background`): started in order, stopped in reverse."""

    def start(self) -> None: ...

    async def stop(self) -> None: ...


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait for it to end: its cancellation is expected, its failure is raised."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
