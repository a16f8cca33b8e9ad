"""``armada serve``: the API, the event store and the scheduler (in one or more processes).

The server's modules (Litestar, uvicorn, SQLAlchemy, Alembic, the scheduler and numpy) are
imported when the command runs: every other command starts without them.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import armada
from armada.cli.options import ConfigOption, DatabaseUrlOption, settings_or_exit
from armada.cli.startup import DebugOption, StartupError, check_port_free, check_tls_files, startup_errors

if TYPE_CHECKING:
    from armada.settings import Settings


def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8080).")] = None,
    grpc_port: Annotated[
        int | None, typer.Option(help="Port of the gRPC API (default 50051; 0 turns it off).")
    ] = None,
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
    workers: Annotated[
        int | None,
        typer.Option(help="Server processes sharing the port, one per core (PostgreSQL only).", min=1),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Serve the REST API, the event store and the scheduler."""
    with startup_errors(debug):
        _serve(
            {
                "server": {
                    "host": host,
                    "port": port,
                    "grpcPort": grpc_port,
                    "dev": dev,
                    "tlsCert": str(tls_cert) if tls_cert else None,
                    "tlsKey": str(tls_key) if tls_key else None,
                    "workers": workers,
                },
                "database": {"url": database_url},
            },
            config,
            database_url,
        )


def _serve(overrides: dict[str, dict[str, Any]], config: Path | None, database_url: str | None) -> None:
    # gRPC's core logs info lines in a format of its own (a fork_posix.cc line when the process
    # backend starts a job while gRPC is busy): its errors only, unless the operator asks.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    import asyncio  # noqa: PLC0415 (start-up time: see the module's docstring)

    import structlog  # noqa: PLC0415
    from sqlalchemy.exc import DBAPIError  # noqa: PLC0415

    from armada.auth.bind_address import published_credentials, startup_refusals  # noqa: PLC0415
    from armada.cli.dev_executor import dev_executor  # noqa: PLC0415
    from armada.cli.http_server import run_server, run_workers  # noqa: PLC0415
    from armada.eventstore import migrate  # noqa: PLC0415
    from armada.eventstore.dialects import normalise_url  # noqa: PLC0415
    from armada.logging_setup import configure_logging  # noqa: PLC0415
    from armada.tracing import missing_extra  # noqa: PLC0415

    log = structlog.get_logger(__name__)
    settings = settings_or_exit(config, overrides)
    configure_logging(settings.logging)
    refusals = startup_refusals(settings.auth, settings.server.host)
    refusals += [missing] if (missing := missing_extra(settings.tracing)) else []
    if refusals := refusals + _dev_refusals(settings, config, database_url):
        for refusal in refusals:
            typer.echo(f"error: {refusal}", err=True)
        raise typer.Exit(2)
    if settings.server.workers > 1 and (
        settings.server.dev or normalise_url(settings.database.url).get_backend_name() != "postgresql"
    ):
        why = "SQLite replicas cannot see each other's writes; the dev executor runs in one process"
        typer.echo(f"error: --workers > 1 needs PostgreSQL and no --dev ({why})", err=True)
        raise typer.Exit(2)
    _check_listening(settings)
    try:
        asyncio.run(_prepare_database(settings))
    except migrate.SchemaTooNew as exc:
        raise StartupError(str(exc)) from exc
    except DBAPIError as exc:
        where = normalise_url(settings.database.url).render_as_string(hide_password=True)
        problem = str(exc.orig or exc).strip().splitlines()[0]
        raise StartupError(f"cannot open the database {where}: {problem}") from exc
    log.info(
        "armada starting",
        version=armada.__version__,
        host=settings.server.host,
        port=settings.server.port,
        grpc_port=settings.server.grpc_port,
        tls=bool(settings.server.tls_cert),
        anonymous=settings.auth.anonymous,
        database=normalise_url(settings.database.url).render_as_string(hide_password=True),
    )
    auth = settings.auth
    if auth.anonymous and (auth.basic_users or auth.tokens or auth.oidc):
        log.warning("anonymous access is on beside credentials: set auth.anonymous false in production")
    if published := published_credentials(auth):
        log.warning("published example credentials accepted (loopback only)", settings=published)
    if settings.server.workers > 1:
        if not run_workers(settings):
            raise typer.Exit(1)
    elif not run_server(settings, dev=dev_executor(settings) if settings.server.dev else None):
        raise typer.Exit(1)


def _dev_refusals(settings: "Settings", config: Path | None, database_url: str | None) -> list[str]:
    """Why the in-process executor of ``--dev`` (the process backend) must not start: see
    :mod:`armada.executor.backends.process_isolation`. Its jobs must not read the settings
    file, the database, the TLS key, nor a database password given on the command line."""
    if not settings.server.dev:
        return []
    from armada.cli.dev_executor import dev_executor_settings  # noqa: PLC0415
    from armada.eventstore.dialects import normalise_url  # noqa: PLC0415
    from armada.executor.backends.process_isolation import process_refusals  # noqa: PLC0415

    private = [Path(name) for name in (settings.server.tls_key,) if name]
    url = normalise_url(settings.database.url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        private += [Path(url.database + suffix) for suffix in ("", "-wal", "-shm")]
    if config is not None:
        private.append(config)
    given = database_url is not None and normalise_url(database_url).password is not None
    exposed = {"--database-url": "ARMADA_DATABASE_URL or the settings file"} if given else {}
    executor = dev_executor_settings(settings)
    return process_refusals(executor.process, executor.cluster_id, settings.server.host, private, exposed)


async def _prepare_database(settings: "Settings") -> None:
    """Migrate before accepting traffic, so that schema problems fail fast and clearly."""
    from armada.eventstore import migrate  # noqa: PLC0415
    from armada.eventstore.database import Database  # noqa: PLC0415

    database = Database(settings.database.url)
    try:
        await migrate.upgrade(database.engine)
    finally:
        await database.close()


def _check_listening(settings: "Settings") -> None:
    """The ports are free and the TLS files load (workers share the gRPC port on purpose)."""
    server = settings.server
    check_port_free(server.host, server.port, "HTTP", ": stop the process using it, or pick another --port")
    if server.workers == 1:
        hint = (
            ": give each replica on this machine its own --grpc-port (server.grpcPort), or 0 to turn gRPC off"
        )
        check_port_free(server.host, server.grpc_port, "gRPC", hint)
    if server.tls_cert:
        check_tls_files(server.tls_cert, server.tls_key)
