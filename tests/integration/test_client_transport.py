"""The clients' HTTP/1.1 transport against a real socket server that answers as scripted per path."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httptools
import httpx
import pytest
import trustme

from armada.client.transport import Http11Transport, client_transport

Reply = Callable[["Exchange"], Awaitable[bool]]


@dataclass
class Exchange:
    """One request as the server read it, and the socket to answer on."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    writer: asyncio.StreamWriter


class _RequestReader:
    def __init__(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.headers: dict[str, str] = {}
        self.body = b""
        self.done = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode().lower()] = value.decode()

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.done = True


@dataclass
class Server:
    """Counts the connections it accepts; ``replies`` by path say what to send (and whether
    to keep the connection open for another request)."""

    replies: Mapping[str, Reply]
    connections: int = 0
    requests: list[Exchange] = field(default_factory=list)
    handlers: dict[asyncio.Task[None], asyncio.StreamWriter] = field(default_factory=dict)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.handlers[task] = writer
        try:
            while True:
                request = _RequestReader()
                while not request.done:
                    data = await reader.read(65536)
                    if not data:
                        return
                    request.parser.feed_data(data)
                method = request.parser.get_method().decode()
                exchange = Exchange(method, request.url.decode(), request.headers, request.body, writer)
                self.requests.append(exchange)
                if not await self.replies[exchange.path](exchange):
                    return
        finally:
            writer.close()


def response(status: int, body: bytes, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", *headers, "", ""]
    return "\r\n".join(lines).encode() + body


async def json_reply(exchange: Exchange) -> bool:
    body = b'{"path": "%s"}' % exchange.path.encode()
    answer = response(200, body, "content-type: application/json")
    if exchange.method == "HEAD":  # the length of the body a GET would have had, and no body
        answer = answer.removesuffix(body)
    exchange.writer.write(answer)
    return True


async def echo_reply(exchange: Exchange) -> bool:
    framing = exchange.headers.get("transfer-encoding", "content-length")
    exchange.writer.write(response(200, exchange.body, f"x-framing: {framing}"))
    return True


async def until_close_reply(exchange: Exchange) -> bool:
    exchange.writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it")
    await exchange.writer.drain()
    return False


async def connection_close_reply(exchange: Exchange) -> bool:
    exchange.writer.write(response(200, b"bye", "connection: close"))
    return False


async def silently_closed_reply(exchange: Exchange) -> bool:
    """A complete keep-alive response, then the server closes the idle connection anyway."""
    exchange.writer.write(response(200, b"ok"))
    await exchange.writer.drain()
    return False


async def slow_reply(exchange: Exchange) -> bool:
    await asyncio.sleep(1)  # longer than the client's read timeout: it gives up first
    return False


async def garbage_reply(exchange: Exchange) -> bool:
    exchange.writer.write(b"HTTP/1.1 abc\r\n\r\n")
    return True


async def cut_reply(exchange: Exchange) -> bool:
    exchange.writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")
    await exchange.writer.drain()
    return False


@asynccontextmanager
async def serving(
    replies: Mapping[str, Reply], tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[Server, str]]:
    server = Server(replies)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=tls)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield server, f"{'https' if tls else 'http'}://{'localhost' if tls else '127.0.0.1'}:{port}"
    finally:
        listener.close()
        for writer in server.handlers.values():
            writer.close()  # a handler waiting for the next request reads the end and returns
        if server.handlers:
            await asyncio.wait(server.handlers, timeout=10)


BASIC: dict[str, Reply] = {
    "/json": json_reply,
    "/echo": echo_reply,
    "/until-close": until_close_reply,
    "/close": connection_close_reply,
    "/closed-after": silently_closed_reply,
    "/slow": slow_reply,
    "/garbage": garbage_reply,
    "/cut": cut_reply,
}


@asynccontextmanager
async def client(
    base: str, transport: Http11Transport | None = None, **options: object
) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, transport=transport or Http11Transport(), **options) as http:  # type: ignore[arg-type]
        yield http


async def test_keep_alive_serves_requests_in_turn_on_one_connection_and_concurrent_ones_on_several() -> None:
    async with serving(BASIC) as (server, base), client(base) as http:
        for _ in range(5):
            answer = await http.get("/json")
            assert answer.status_code == 200
            assert answer.json() == {"path": "/json"}
            assert answer.http_version == "HTTP/1.1"
        assert server.connections == 1
        answers = await asyncio.gather(*(http.post("/echo", content=b"x%d" % i) for i in range(4)))
        assert [answer.content for answer in answers] == [b"x0", b"x1", b"x2", b"x3"]
        assert 1 <= server.connections <= 4
        before = server.connections
        await asyncio.gather(*(http.get("/json") for _ in range(4)))
        assert server.connections == before  # the idle ones were reused


async def test_a_response_streams_as_the_server_writes_it() -> None:
    first_line_seen = asyncio.Event()

    async def chunked(exchange: Exchange) -> bool:
        exchange.writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        exchange.writer.write(b"6\r\nfirst\n\r\n")
        await exchange.writer.drain()
        await asyncio.wait_for(first_line_seen.wait(), 5)  # the client has it before the rest exists
        exchange.writer.write(b"7\r\nsecond\n\r\n0\r\n\r\n")
        return True

    async with serving({**BASIC, "/chunked": chunked}) as (server, base), client(base) as http:
        lines = []
        async with http.stream("GET", "/chunked") as streamed:
            async for line in streamed.aiter_lines():
                lines.append(line)
                first_line_seen.set()
        assert lines == ["first", "second"]
        assert (await http.get("/json")).status_code == 200
        assert server.connections == 1


async def test_bodies_that_end_with_the_connection_and_connections_the_server_closes() -> None:
    async with serving(BASIC) as (server, base), client(base) as http:
        assert (await http.get("/until-close")).content == b"all of it"
        assert (await http.get("/close")).content == b"bye"
        assert (await http.get("/closed-after")).content == b"ok"
        await asyncio.sleep(0.05)  # the server's close reaches the client's idle connection
        assert (await http.get("/json")).status_code == 200
        assert server.connections == 4  # none of the first three was reused


async def test_request_bodies_with_a_length_or_in_chunks() -> None:
    async def parts() -> AsyncIterator[bytes]:
        yield b"one,"
        yield b"two"

    async with serving(BASIC) as (_, base), client(base) as http:
        sized = await http.post("/echo", content=b"sized body")
        assert (sized.content, sized.headers["x-framing"]) == (b"sized body", "content-length")
        chunked = await http.post("/echo", content=parts())
        assert (chunked.content, chunked.headers["x-framing"]) == (b"one,two", "chunked")
        empty = await http.post("/echo", content=b"")
        assert empty.content == b""


async def test_head_answers_have_no_body_and_spoil_no_connection() -> None:
    async with serving(BASIC) as (server, base), client(base) as http:
        head = await http.head("/json")
        assert (head.status_code, head.content, head.headers["content-length"]) == (200, b"", "17")
        assert (await http.get("/json")).json() == {"path": "/json"}
        assert server.connections == 2


async def test_failures_are_httpx_errors_and_leave_the_client_usable() -> None:
    async with serving(BASIC) as (server, base), client(base, timeout=httpx.Timeout(5, read=0.2)) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get("/slow")
        with pytest.raises(httpx.RemoteProtocolError, match="malformed"):
            await http.get("/garbage")
        with pytest.raises(httpx.RemoteProtocolError, match="before the response was complete"):
            await http.get("/cut")
        assert (await http.get("/json")).status_code == 200
        assert server.connections == 4


async def test_a_refused_connection_is_a_connect_error() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    async with client(f"http://127.0.0.1:{port}") as http:
        with pytest.raises(httpx.ConnectError):
            await http.get("/json")


async def test_max_connections_bounds_exchanges_in_flight() -> None:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    transport = Http11Transport(limits=limits)
    async with (
        serving(BASIC) as (_, base),
        client(base, transport, timeout=httpx.Timeout(5, pool=0.2)) as http,
    ):
        async with http.stream("GET", "/json"):  # holds the only slot until closed
            with pytest.raises(httpx.PoolTimeout):
                await http.get("/json")
        assert (await http.get("/json")).status_code == 200


async def test_tls_verifies_the_server_against_the_given_authority() -> None:
    authority = trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(server_tls)
    trusting = ssl.create_default_context()
    authority.configure_trust(trusting)
    async with serving(BASIC, tls=server_tls) as (server, base):
        async with client(base, Http11Transport(verify=trusting)) as http:
            assert (await http.get("/json")).json() == {"path": "/json"}
            assert (await http.get("/json")).status_code == 200
            assert server.connections == 1
        async with client(base, Http11Transport(verify=ssl.create_default_context())) as http:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.get("/json")


def test_a_proxy_in_the_environment_leaves_routing_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(client_transport(), Http11Transport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert client_transport() is None
