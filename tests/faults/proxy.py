"""A TCP proxy the test controls, to partition an executor from the server.

It forwards a local port to the server. ``partition()`` aborts every open connection (so
requests in flight lose their answers, as in a real network failure) and resets new ones
until ``heal()``. It runs its own event loop in a thread; nothing outside the test's own
processes is touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from tests.processes import free_port


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.partitioned = False
        self.refused = 0
        self._transports: set[asyncio.WriteTransport] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._call(self._listen())

    def stop(self) -> None:
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def partition(self) -> None:
        self._call(self._cut())

    def heal(self) -> None:
        self.partitioned = False

    def _call(self, coroutine: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def _close(self) -> None:
        self._server.close()
        await self._cut()

    async def _cut(self) -> None:
        self.partitioned = True
        for transport in list(self._transports):
            transport.abort()
        self._transports.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.partitioned:
            self.refused += 1
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        pair = {writer.transport, upstream_writer.transport}
        self._transports |= pair
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        self._transports -= pair


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        writer.close()


@contextmanager
def tcp_proxy(target_port: int) -> Iterator[TcpProxy]:
    proxy = TcpProxy(target_port)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
