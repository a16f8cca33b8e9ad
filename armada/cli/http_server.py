"""Running the HTTP server: one process, or ``--workers N`` processes sharing one socket.

Each worker is a full replica (API, log follower, scheduler candidate) and leader election
lets exactly one of them schedule, as with replicas on several machines. Python runs one
core per process, so workers are how one machine's cores all serve the API. They need
PostgreSQL: replicas learn of each other's writes through LISTEN/NOTIFY.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
from collections.abc import Iterator
from types import FrameType

import structlog
import uvicorn
from litestar import Litestar

from armada.api.app import create_app
from armada.api.services import Services
from armada.cli.dev_executor import DevExecutor
from armada.logging_setup import configure_logging
from armada.runtime import tune_for_service
from armada.settings import Settings
from armada.tracing import tracing

log = structlog.get_logger(__name__)

multiprocessing.allow_connection_pickling()  # the listening socket travels to the workers
_spawn = multiprocessing.get_context("spawn")


def uvicorn_config(settings: Settings, app: Litestar | None) -> uvicorn.Config:
    server = settings.server
    return uvicorn.Config(
        app,  # type: ignore[arg-type]  # None only in the parent of workers, which only binds
        host=server.host,
        port=server.port,
        log_config=None,
        lifespan="on",
        # uvloop (a dependency) when installed; REST, gRPC, the scheduler and the in-process
        # executor all run on it (~13% less CPU per stream message: docs/performance-notes.md, gRPC).
        loop="auto",
        # httptools (a dependency) parses HTTP/1.1 in C: ~14% less server CPU than h11 per
        # one-job submission (docs/performance-notes.md, "Submission").
        http="httptools",
        timeout_graceful_shutdown=server.shutdown_timeout,
        timeout_keep_alive=server.keep_alive_timeout,
        ssl_certfile=server.tls_cert or None,
        ssl_keyfile=server.tls_key or None,
        server_header=False,
        # The client address keys per-client limits: take it from trusted proxies only.
        forwarded_allow_ips=server.forwarded_allow_ips or None,  # None: uvicorn trusts 127.0.0.1
    )


def run_server(
    settings: Settings, sockets: list[socket.socket] | None = None, dev: DevExecutor | None = None
) -> bool:
    """Serve in this process (with ``dev``'s executor beside it) until stopped; False if the
    server never started."""
    app = (
        create_app(settings)
        if dev is None
        else create_app(settings, internal=dev.token, companions=dev.companions)
    )
    server = GracefulServer(app, uvicorn_config(settings, app))
    tune_for_service()
    with tracing(settings.tracing):
        server.run(sockets=sockets)
    return server.started


def run_workers(settings: Settings) -> bool:
    """Start ``server.workers`` processes on one socket; stop them all when one ends.

    A worker that exits on its own (a crash) takes the others down, so that the process
    supervisor (Kubernetes, systemd) restarts the whole server rather than run it short.
    """
    listener = uvicorn_config(settings, None).bind_socket()  # logs "Uvicorn running on ..."
    workers = [
        _spawn.Process(target=_worker, args=(settings, listener, index), name=f"armada-server-{index}")
        for index in range(settings.server.workers)
    ]
    stopping = False

    def stop(signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.pid is not None and worker.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for worker in workers:
            worker.start()
        multiprocessing.connection.wait([worker.sentinel for worker in workers])
        if not stopping:
            crashed = [w.name for w in workers if w.exitcode is not None]
            log.error("a server worker exited; stopping the others", workers=crashed)
            stop()
        for worker in workers:
            worker.join(settings.server.shutdown_timeout + 10)
            if worker.exitcode is None:
                worker.kill()
                worker.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
    return stopping and all(worker.exitcode == 0 for worker in workers)


def _worker(settings: Settings, listener: socket.socket, index: int) -> None:
    configure_logging(settings.logging, worker=index)
    if not run_server(settings, sockets=[listener]):
        raise SystemExit(1)


class GracefulServer(uvicorn.Server):
    """Stops gracefully on SIGTERM/SIGINT and exits 0 (uvicorn would re-raise the signal).

    The app's :class:`~armada.api.shutdown.ShutdownSignal` tells endless streams to end,
    so that open browser tabs do not hold the server for its whole grace period.
    """

    def __init__(self, app: Litestar, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        services: Services | None = getattr(self.app.state, "services", None)
        if services is not None:  # absent until the lifespan has started
            services.shutdown.trigger()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
