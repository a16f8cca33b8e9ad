"""The server is stopping: endless streams (live UI updates, watched event streams) end.

uvicorn waits for open responses before it runs the lifespan's shutdown, so a stream that
never ends holds a stopping server for its whole grace period and is then cancelled
mid-write. ``armada serve`` triggers this signal from its SIGTERM/SIGINT handler instead,
and streams that wait on it finish cleanly at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from armada.tasks import cancel_and_wait

T = TypeVar("T")


class ShutdownSignal:
    """Created inside the server's event loop; :meth:`trigger` is safe from a signal handler."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def trigger(self) -> None:
        self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self) -> None:
        await self._event.wait()

    @property
    def triggered(self) -> bool:
        return self._event.is_set()

    async def unless_stopping(self, coroutine: Coroutine[Any, Any, T]) -> T | None:
        """The coroutine's result, or ``None`` (it is cancelled) once the server starts stopping."""
        task = asyncio.ensure_future(coroutine)
        stopping = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                await cancel_and_wait(task)
        return None if task.cancelled() else task.result()
