"""``armada serve``: the API, the event store and the scheduler in one process."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated

import structlog
import typer
import uvicorn
from litestar import Litestar

import armada
from armada.api.app import create_app
from armada.api.shutdown import ShutdownSignal
from armada.cli.options import ConfigOption, DatabaseUrlOption, settings_or_exit
from armada.eventstore import migrate
from armada.eventstore.database import Database
from armada.eventstore.dialects import normalise_url
from armada.logs import configure_logging
from armada.settings import Settings

log = structlog.get_logger(__name__)


def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8080).")] = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    dev: Annotated[
        bool | None, typer.Option("--dev", help="Also run a local process executor in this server.")
    ] = None,
    tls_cert: Annotated[
        Path | None, typer.Option(help="PEM certificate chain: serve HTTPS.", exists=True, dir_okay=False)
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option(help="PEM private key of --tls-cert.", exists=True, dir_okay=False)
    ] = None,
) -> None:
    """Serve the REST API, the event store and the scheduler."""
    settings = settings_or_exit(
        config,
        {
            "server": {
                "host": host,
                "port": port,
                "dev": dev,
                "tlsCert": str(tls_cert) if tls_cert else None,
                "tlsKey": str(tls_key) if tls_key else None,
            },
            "database": {"url": database_url},
        },
    )
    configure_logging(settings.logging)
    try:
        asyncio.run(_prepare_database(settings))
    except migrate.SchemaTooNew as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    log.info(
        "armada starting",
        version=armada.__version__,
        host=settings.server.host,
        port=settings.server.port,
        tls=bool(settings.server.tls_cert),
        anonymous=settings.auth.anonymous,
        database=normalise_url(settings.database.url).render_as_string(hide_password=True),
    )
    auth = settings.auth
    if auth.anonymous and (auth.basic_users or auth.tokens or auth.oidc):
        log.warning("anonymous access is on beside credentials: set auth.anonymous false in production")
    app = create_app(settings)
    server = _GracefulServer(
        app,
        uvicorn.Config(
            app,
            host=settings.server.host,
            port=settings.server.port,
            log_config=None,
            lifespan="on",
            timeout_graceful_shutdown=settings.server.shutdown_timeout,
            timeout_keep_alive=settings.server.keep_alive_timeout,
            ssl_certfile=settings.server.tls_cert or None,
            ssl_keyfile=settings.server.tls_key or None,
            server_header=False,
        ),
    )
    server.run()
    if not server.started:
        raise typer.Exit(1)


async def _prepare_database(settings: Settings) -> None:
    """Migrate before accepting traffic, so that schema problems fail fast and clearly."""
    database = Database(settings.database.url)
    try:
        await migrate.upgrade(database.engine)
    finally:
        await database.close()


class _GracefulServer(uvicorn.Server):
    """Stops gracefully on SIGTERM/SIGINT and exits 0 (uvicorn would re-raise the signal).

    The app's :class:`~armada.api.shutdown.ShutdownSignal` tells endless streams to end,
    so that open browser tabs do not hold the server for its whole grace period.
    """

    def __init__(self, app: Litestar, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        shutdown: ShutdownSignal | None = getattr(self.app.state, "shutdown", None)
        if shutdown is not None:  # absent until the lifespan has started
            shutdown.trigger()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
