"""``armada admin``: operator commands that work on the database directly.

The event store is imported when a command runs, not when the CLI starts.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from armada.cli.options import ConfigOption, DatabaseUrlOption, settings_or_exit
from armada.cli.retention import archive_app, prune_command

if TYPE_CHECKING:
    from armada.services.invariants import Report

app = typer.Typer(help="Operator commands that work on the database directly.", no_args_is_help=True)
app.command("prune")(prune_command)
app.add_typer(archive_app, name="archive")


@app.command("rebuild-views")
def rebuild_views_command(database_url: DatabaseUrlOption = None, config: ConfigOption = None) -> None:
    """Replay the whole event log into fresh views."""
    import asyncio  # noqa: PLC0415 (start-up time)

    from armada.eventstore.database import Database  # noqa: PLC0415
    from armada.eventstore.rebuild import rebuild_views  # noqa: PLC0415

    settings = settings_or_exit(config, {"database": {"url": database_url}})

    async def run() -> int:
        database = await Database(settings.database.url).open(listen=False)
        try:
            return await rebuild_views(database.store)
        finally:
            await database.close()

    replayed = asyncio.run(run())
    typer.echo(f"rebuilt views from {replayed} events")


@app.command("migrate")
def migrate_command(database_url: DatabaseUrlOption = None, config: ConfigOption = None) -> None:
    """Upgrade the database schema to this version (``serve`` also does this on start)."""
    import asyncio  # noqa: PLC0415 (start-up time)

    from armada.eventstore import migrate  # noqa: PLC0415
    from armada.eventstore.database import Database  # noqa: PLC0415

    settings = settings_or_exit(config, {"database": {"url": database_url}})

    async def run() -> "migrate.SchemaStatus":
        database = await Database(settings.database.url).open(listen=False)
        try:
            return await migrate.status(database.engine)
        finally:
            await database.close()

    try:
        status = asyncio.run(run())
    except migrate.SchemaTooNew as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if status.revision == status.head:
        typer.echo(f"database schema is up to date (revision {status.revision})")
    else:
        typer.echo(
            f"database schema is at revision {status.revision}, newer than this version's "
            f"{status.head}: left as it is (this version runs on it)"
        )


@app.command("check")
def check_command(database_url: DatabaseUrlOption = None, config: ConfigOption = None) -> None:
    """Verify the log and the views (one active run per job, views equal a replay) and that the
    configured default retry policy exists; exit 1 if not."""
    import asyncio  # noqa: PLC0415 (start-up time)

    from armada.eventstore.database import Database  # noqa: PLC0415
    from armada.retries.policies import missing_default_policy  # noqa: PLC0415
    from armada.services.invariants import check  # noqa: PLC0415

    settings = settings_or_exit(config, {"database": {"url": database_url}})

    async def run() -> "Report":
        database = await Database(settings.database.url).open(migrate_schema=False, listen=False)
        try:
            report = await check(database.store)
            if missing := await missing_default_policy(database.store, settings.scheduling.retry_policy):
                report.violation(missing)
            return report
        finally:
            await database.close()

    report = asyncio.run(run())
    for violation in report.violations:
        typer.echo(violation)
    for warning in report.warnings:
        typer.echo(f"warning: {warning}")
    verdict = "ok" if report.ok else f"FAILED: {len(report.violations)} violations listed"
    typer.echo(f"{verdict} ({report.events} events, {report.jobs} jobs, {report.runs} runs checked)")
    if not report.ok:
        raise typer.Exit(1)


@app.command("backup")
def backup_command(
    file: Annotated[Path, typer.Argument(help="The new file to write the copy to.", dir_okay=False)],
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Copy the SQLite database to FILE, consistent as of one commit, while servers keep
    running (PostgreSQL: pg_dump or a base backup, see docs/operations.md)."""
    from armada.eventstore.backup import backup_sqlite  # noqa: PLC0415 (start-up time)
    from armada.model.errors import InvalidRequest  # noqa: PLC0415

    settings = settings_or_exit(config, {"database": {"url": database_url}})
    try:
        size = backup_sqlite(settings.database.url, file)
    except InvalidRequest as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"backed up to {file} ({size} bytes); serve it with --database-url sqlite:///{file.resolve()}")
