"""What ``armada serve --dev`` adds to the server: an in-process executor and a job log.

The executor talks HTTP to this very server, which listens only once the lifespan has
started: leasing at once would fail, and print a warning at every start. It waits until
the port accepts connections instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

#: Seconds between attempts to connect to the server while it starts.
POLL = 0.05


async def when_listening(url: str, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` once the server at ``url`` accepts TCP connections."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    while True:
        try:
            _, writer = await asyncio.open_connection(parts.hostname, port)
        except OSError:
            await asyncio.sleep(POLL)
            continue
        writer.close()
        await writer.wait_closed()
        break
    await work()
