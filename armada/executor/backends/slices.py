"""Time slices for long loops on the event loop (every pod, every node of a big cluster).

A loop over 100,000 pods would hold the event loop for seconds: heartbeats, watches and
lease calls wait meanwhile. Loops yield once they have run for a slice of time rather than
after a count of items, since the cost per item varies (a pending pod is decoded and
checked, a running one only looked up).
"""

from __future__ import annotations

import asyncio
import time

#: Longest a long loop runs before it yields to the event loop.
SLICE_SECONDS = 0.005


class Slices:
    """Yields to the event loop whenever the loop calling ``tick`` has run for a slice."""

    def __init__(self, seconds: float = SLICE_SECONDS) -> None:
        self._seconds = seconds
        self._since = time.perf_counter()

    async def tick(self) -> None:
        if time.perf_counter() - self._since >= self._seconds:
            await asyncio.sleep(0)
            self._since = time.perf_counter()
