"""Stopping a background task: cancel it and wait until it has ended.

Long-running components (the change listener, the quarantine, the executor's loops, the
server's lifespan) stop their tasks this way; the wait matters, since a task cancelled but
not awaited may still hold a connection, or write, after its owner has been closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait for it to end: its cancellation is expected, its failure is raised."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
