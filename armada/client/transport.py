"""HTTP/1.1 for the asyncio clients: keep-alive connections on asyncio streams, parsed by httptools.

httpx's default transport (httpcore over anyio) spends ~1.3 ms of CPU on every request on
this project's 2-core hosts: as much as the server spends accepting a one-job submission,
and on the same cores when client and server share a machine. This transport does the same
work in ~0.1 ms (httpx's own request and response objects add ~0.3 ms), which is what lets a
client that submits one job per call, or an executor reporting as it goes, keep up.

It speaks what the Armada API needs: HTTP/1.1 with ``Content-Length`` or chunked bodies,
keep-alive, TLS, streamed responses, and httpx's four timeouts and pool limits. Proxies are
httpx's business: :func:`client_transport` leaves a client on httpx's own transport when a
proxy variable is set.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import httptools
import httpx

T = TypeVar("T")

#: Bytes read from a socket at a time.
READ_SIZE = 64 * 1024
#: Proxy variables that httpx honours (in either case); with any of them set, httpx routes.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
#: Methods whose responses have no body, whatever their headers say.
_NO_BODY = frozenset({"HEAD"})


def client_transport(verify: ssl.SSLContext | bool = True) -> httpx.AsyncBaseTransport | None:
    """This module's transport, or ``None`` (httpx's own) when the environment names a proxy."""
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in PROXY_VARIABLES):
        return None
    return Http11Transport(verify=verify)


class _Response:
    """httptools' callbacks for one response: status line, headers, body chunks, the end."""

    __slots__ = ("body", "complete", "headers", "headers_done", "keep_alive", "messages", "parser")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.headers_done = False
        self.complete = False
        #: Read when the headers are complete: llhttp forgets once the message is.
        self.keep_alive = False
        #: More than one means the server sent bytes after the response: the connection is spoilt.
        self.messages = 0

    def on_message_begin(self) -> None:
        self.messages += 1

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class _Connection:
    """One keep-alive connection to an origin; serves one exchange at a time."""

    def __init__(self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.idle_since = time.monotonic()

    def reusable(self, expiry: float | None) -> bool:
        """Still open (the server closes idle connections), and not idle for too long."""
        if self.writer.is_closing() or self.reader.at_eof():
            return False
        return expiry is None or time.monotonic() - self.idle_since < expiry

    def close(self) -> None:
        self.writer.close()


Origin = tuple[str, str, int]
#: httpx's own defaults.
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)


def _origin(url: httpx.URL) -> Origin:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


class Http11Transport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` for plain and TLS HTTP/1.1 (see the module's docstring).

    ``limits.max_connections`` bounds the exchanges in flight (each has its own connection),
    ``max_keepalive_connections`` the idle connections kept, ``keepalive_expiry`` how long.
    """

    def __init__(
        self, *, verify: ssl.SSLContext | bool = True, limits: httpx.Limits = DEFAULT_LIMITS
    ) -> None:
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None
        self._limits = limits
        self._slots = asyncio.Semaphore(limits.max_connections) if limits.max_connections else None
        self._idle: dict[Origin, list[_Connection]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport is closed")
        timeouts = request.extensions.get("timeout", {})
        if self._slots is not None:
            acquiring = self._slots.acquire()
            await (
                _within(acquiring, timeouts.get("pool"), httpx.PoolTimeout, request)
                if self._slots.locked()
                else acquiring
            )
        connection = None
        try:
            connection = await self._connection(request, timeouts.get("connect"))
            await self._send(connection, request, timeouts.get("write"))
            response = _Response()
            read_timeout = timeouts.get("read")
            while not response.headers_done:
                await _feed(connection, response, read_timeout, request)
            exchange = _Exchange(self, connection, request, response, read_timeout)
        except BaseException:
            if connection is not None:
                connection.close()
            self.release()
            raise
        return httpx.Response(
            response.parser.get_status_code(),
            headers=response.headers,
            stream=exchange,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    async def _connection(self, request: httpx.Request, timeout: float | None) -> _Connection:
        origin = _origin(request.url)
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.reusable(self._limits.keepalive_expiry):
                return connection
            connection.close()
        tls = self._tls_context() if origin[0] == "https" else None
        opening = asyncio.open_connection(
            origin[1], origin[2], ssl=tls, server_hostname=origin[1] if tls else None, limit=READ_SIZE
        )
        try:
            reader, writer = await _within(opening, timeout, httpx.ConnectTimeout, request)
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"{type(exc).__name__}: {exc}", request=request) from exc
        return _Connection(origin, reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            verify = self._verify
            self._ssl = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify)
        return self._ssl

    @staticmethod
    async def _send(connection: _Connection, request: httpx.Request, timeout: float | None) -> None:
        try:
            body = request.content
        except httpx.RequestNotRead:
            body = await request.aread()
        lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), request.url.raw_path)]
        lines += [b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw]
        lines.append(b"\r\n")
        if request.headers.get("transfer-encoding", "").lower() == "chunked":
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        writer = connection.writer
        try:
            writer.write(b"".join(lines) + body)
            if writer.transport.get_write_buffer_size():  # else the socket took it all: no wait
                await _within(writer.drain(), timeout, httpx.WriteTimeout, request)
        except OSError as exc:
            raise httpx.WriteError(f"{type(exc).__name__}: {exc}", request=request) from exc

    def keep(self, connection: _Connection) -> None:
        """Keep an idle connection for its origin's next request (up to the keep-alive limit)."""
        idle, most = self._idle.setdefault(connection.origin, []), self._limits.max_keepalive_connections
        if self._closed or (most is not None and len(idle) >= most):
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    def release(self) -> None:
        """An exchange is over: another may start (``max_connections``)."""
        if self._slots is not None:
            self._slots.release()


class _Exchange(httpx.AsyncByteStream):
    """A response's body as it arrives; closing it frees the connection for the next request."""

    def __init__(
        self,
        transport: Http11Transport,
        connection: _Connection,
        request: httpx.Request,
        state: _Response,
        read_timeout: float | None,
    ) -> None:
        self._transport = transport
        self._connection: _Connection | None = connection
        self._request = request
        self._state = state
        self._read_timeout = read_timeout
        if request.method in _NO_BODY:
            state.complete = True
            state.messages += 1  # the parser expects the body the headers announce: never reuse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        state = self._state
        while True:
            if state.body:
                chunks, state.body = state.body, []
                yield b"".join(chunks)
            if state.complete or self._connection is None:
                break
            await _feed(self._connection, state, self._read_timeout, self._request)
        await self.aclose()

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        state = self._state
        reusable = state.complete and state.messages == 1 and state.keep_alive
        if reusable and self._request.headers.get("connection", "").lower() != "close":
            self._transport.keep(connection)
        else:
            connection.close()
        self._transport.release()


async def _feed(
    connection: _Connection,
    state: _Response,
    timeout: float | None,
    request: httpx.Request,
) -> None:
    """Read once from the connection into the parser; the end of the stream ends a body that
    runs until the connection closes, and is an error anywhere else."""
    try:
        data = await _within(connection.reader.read(READ_SIZE), timeout, httpx.ReadTimeout, request)
    except OSError as exc:
        raise httpx.ReadError(f"{type(exc).__name__}: {exc}", request=request) from exc
    if not data:
        if state.headers_done and _until_close(state.headers):
            state.complete = True
            state.messages += 1  # the connection is gone: never reuse it
            return
        raise httpx.RemoteProtocolError(
            "the server closed the connection before the response was complete", request=request
        )
    try:
        state.parser.feed_data(data)
    except httptools.HttpParserUpgrade as exc:
        raise httpx.RemoteProtocolError("the server switched protocols", request=request) from exc
    except httptools.HttpParserError as exc:
        raise httpx.RemoteProtocolError(f"malformed response: {exc}", request=request) from exc


def _until_close(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the body has neither a length nor chunks, so that it ends with the connection."""
    names = {name.lower() for name, _ in headers}
    return b"content-length" not in names and b"transfer-encoding" not in names


async def _within(
    step: Awaitable[T], timeout: float | None, error: type[httpx.TimeoutException], request: httpx.Request
) -> T:
    """``step``, or ``error`` after ``timeout`` seconds (``None``: no limit)."""
    try:
        async with asyncio.timeout(timeout):
            return await step
    except TimeoutError as exc:
        raise error(f"{error.__name__}: no progress in {timeout} s", request=request) from exc
