"""``armada admin``: operator commands that work on the database directly."""

from __future__ import annotations

import asyncio

import typer

from armada.cli.options import ConfigOption, DatabaseUrlOption, settings_or_exit
from armada.eventstore.database import Database
from armada.eventstore.rebuild import rebuild_views
from armada.services.invariants import Report, check

app = typer.Typer(help="Operator commands that work on the database directly.", no_args_is_help=True)


@app.command("rebuild-views")
def rebuild_views_command(database_url: DatabaseUrlOption = None, config: ConfigOption = None) -> None:
    """Replay the whole event log into fresh views."""
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
    settings = settings_or_exit(config, {"database": {"url": database_url}})

    async def run() -> None:
        database = await Database(settings.database.url).open(listen=False)
        await database.close()

    asyncio.run(run())
    typer.echo("database schema is up to date")


@app.command("check")
def check_command(database_url: DatabaseUrlOption = None, config: ConfigOption = None) -> None:
    """Verify the log and the views (one active run per job, views equal a replay); exit 1 if not."""
    settings = settings_or_exit(config, {"database": {"url": database_url}})

    async def run() -> Report:
        database = await Database(settings.database.url).open(migrate_schema=False, listen=False)
        try:
            return await check(database.store)
        finally:
            await database.close()

    report = asyncio.run(run())
    for violation in report.violations:
        typer.echo(violation)
    verdict = "ok" if report.ok else f"FAILED: {len(report.violations)} violations listed"
    typer.echo(f"{verdict} ({report.events} events, {report.jobs} jobs, {report.runs} runs checked)")
    if not report.ok:
        raise typer.Exit(1)
