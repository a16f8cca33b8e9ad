"""An armada API server inside the test process: real HTTP on a free port, its own thread.

Cheaper than a subprocess per test, yet every request still goes through uvicorn, Litestar
and the database. ``append`` runs on the server's own event loop, so events that stand in
for the scheduler and executors wake the server's streams exactly as theirs will.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
import msgspec
import uvicorn
from litestar import Litestar

from armada.api.app import create_app
from armada.api.settings import ServerSettings
from armada.auth.identity import ANY_EXECUTOR
from armada.auth.secrets import hash_token
from armada.auth.settings import EXECUTORS, StaticToken
from armada.eventstore.settings import DatabaseSettings
from armada.eventstore.store import EventStore
from armada.model.events import Event
from armada.settings import Settings
from tests.processes import TEST_EXECUTOR_TOKEN, free_port

#: Anonymous callers may not execute jobs: executor calls send this header.
EXECUTOR_HEADERS = {"Authorization": f"Bearer {TEST_EXECUTOR_TOKEN}"}
_EXECUTOR_TOKEN = StaticToken(
    user="test-executor",
    token_hash=hash_token(TEST_EXECUTOR_TOKEN),
    groups=[EXECUTORS],
    executors=[ANY_EXECUTOR],
)

T = TypeVar("T")


class ApiServer:
    def __init__(self, url: str, loop: asyncio.AbstractEventLoop, app: Litestar) -> None:
        self.url = url
        self._loop = loop
        self._app = app

    @property
    def app(self) -> Litestar:
        return self._app

    @property
    def store(self) -> EventStore:
        store: EventStore = self._app.state.services.store
        return store

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the server's event loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    def append(self, events: Sequence[Event]) -> int:
        return self.run(self.store.append(events))

    def head(self) -> int:
        return self.run(self.store.head())

    def send_json(self, method: str, path: str, content: bytes, *, timeout: float = 60) -> httpx.Response:
        """``content``, as it is, as the JSON body of a request to ``path`` (with the executor's
        credentials on executor paths): for bodies no client would build."""
        executor = EXECUTOR_HEADERS if "/executor/" in path else {}
        headers = {"Content-Type": "application/json", **executor}
        return httpx.request(method, self.url + path, content=content, headers=headers, timeout=timeout)


@contextmanager
def serving(database_url: str, settings: Settings | None = None) -> Iterator[ApiServer]:
    settings = settings or Settings()
    auth = msgspec.structs.replace(settings.auth, tokens=[*settings.auth.tokens, _EXECUTOR_TOKEN])
    settings = Settings(
        database=DatabaseSettings(url=database_url),
        scheduling=settings.scheduling,
        submission=settings.submission,
        auth=auth,
        lookout=settings.lookout,
        # In-process servers serve no gRPC unless a test names a port (many run at once).
        server=settings.server
        if settings.server.grpc_port != ServerSettings().grpc_port
        else msgspec.structs.replace(settings.server, grpc_port=0),
        # The tests stand in for the scheduler and executors by appending their events.
        scheduler=msgspec.structs.replace(settings.scheduler, enabled=False),
    )
    app = create_app(settings)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_config=None, lifespan="on", timeout_graceful_shutdown=1
        )
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start")
        time.sleep(0.02)
    try:
        yield ApiServer(f"http://127.0.0.1:{port}", loop, app)
    finally:
        server.should_exit = True
        thread.join(30)
        loop.close()
