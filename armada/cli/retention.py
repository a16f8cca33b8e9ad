"""``armada admin prune`` and ``armada admin archive show``: retention by hand.

The event store is imported when a command runs, not when the CLI starts.
"""

from pathlib import Path
from typing import Annotated

import typer

from armada.cli.options import ConfigOption, DatabaseUrlOption, settings_or_exit

ExpireAfterOption = Annotated[
    str | None,
    typer.Option(
        "--expire-after", help="Age at which finished jobs expire (default: retention.expireAfter)."
    ),
]


def prune_command(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be pruned; delete nothing.")
    ] = False,
    expire_after: ExpireAfterOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Prune the finished jobs expired now (archiving them first if retention.archiveDir is set)."""
    import asyncio  # noqa: PLC0415 (start-up time)

    from armada.eventstore import retention  # noqa: PLC0415
    from armada.eventstore.database import Database  # noqa: PLC0415
    from armada.services.retention import Pruner  # noqa: PLC0415

    settings = settings_or_exit(
        config, {"database": {"url": database_url}, "retention": {"expireAfter": expire_after}}
    )

    async def run() -> str:
        database = await Database(settings.database.url).open(listen=False)
        try:
            pruner = Pruner(database.store, settings.retention)
            cutoff = pruner.cutoff()
            if cutoff is None:
                return "retention is off (retention.expireAfter): nothing expires"
            if dry_run:
                async with database.engine.connect() as conn:
                    backlog = await retention.backlog(conn, cutoff)
                return (
                    f"would prune {backlog.jobs} jobs finished before {cutoff.isoformat()}: "
                    f"{backlog.events} events, about {backlog.bytes} bytes of specs and events"
                )
            pruned = await pruner.prune_once(cutoff)
            return f"pruned {pruned} jobs finished before {cutoff.isoformat()}"
        finally:
            await database.close()

    typer.echo(asyncio.run(run()))


archive_app = typer.Typer(help="Read the archive of pruned jobs.", no_args_is_help=True)


@archive_app.command("show")
def archive_show_command(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="An archive file (.jsonl.gz).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print each job's JSON line as stored.")] = False,
) -> None:
    """Print the jobs of an archive file: one line each, or their JSON."""
    import msgspec  # noqa: PLC0415 (start-up time)

    from armada.services.archive import read_batch  # noqa: PLC0415

    for job in read_batch(file):
        if as_json:
            typer.echo(msgspec.json.encode(job).decode())
            continue
        typer.echo(
            f"{job.job_id}  {job.queue}/{job.job_set_id}  {job.state}  {job.last_transition.isoformat()}  "
            f"{len(job.events)} events  {len(job.runs)} runs"
        )
