"""``armada simulate``: replay the recorded log through the scheduling core under other settings.

Reads the database directly (like ``armada admin``); the event store and the scheduling core
are imported when the command runs, not when the CLI starts.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from armada.cli.connection import JsonOption, fail, print_json
from armada.cli.options import DatabaseUrlOption, settings_or_exit

if TYPE_CHECKING:
    from armada.services.simulation.whatif import Comparison


def parse_time(text: str, now: float) -> float:
    """``30m``/``2d`` ago, ``now``, or an RFC 3339 time; seconds since the epoch."""
    from datetime import datetime  # noqa: PLC0415

    from armada.model.durations import parse_duration  # noqa: PLC0415

    if text == "now":
        return now
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise ValueError(f"{text!r} is neither a duration ago (30m, 2d) nor an RFC 3339 time") from exc


def simulate(
    since: Annotated[
        str, typer.Option("--since", help="Window start: a duration ago (6h, 2d) or an RFC 3339 time.")
    ],
    until: Annotated[
        str, typer.Option("--until", help="Window end: a duration ago, an RFC 3339 time, or now.")
    ] = "now",
    candidate: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Candidate settings (YAML): 'scheduling:' keys and 'queues:' changes (docs/simulate.md).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    settings_file: Annotated[
        Path | None,
        typer.Option(
            "--settings", help="The server's settings file: the current settings (default: env).", exists=True
        ),
    ] = None,
    database_url: DatabaseUrlOption = None,
    as_json: JsonOption = False,
    step: Annotated[
        float | None,
        typer.Option(
            "--step",
            min=0.01,
            help="Shortest simulated step between cycles, seconds (default: cycles when the live "
            "scheduler's did); coarser is faster, and rounds waits up to it.",
        ),
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the comparison as a chart page.")
    ] = None,
) -> None:
    """Recorded vs replayed-with-current-settings vs candidate, per queue and pool."""
    import asyncio  # noqa: PLC0415 (start-up time)
    import time  # noqa: PLC0415

    import msgspec  # noqa: PLC0415
    import yaml  # noqa: PLC0415

    from armada.eventstore.database import Database  # noqa: PLC0415
    from armada.services.simulation.render import render_html, render_text  # noqa: PLC0415
    from armada.services.simulation.whatif import Candidate, compare  # noqa: PLC0415

    settings = settings_or_exit(settings_file, {"database": {"url": database_url}})
    now = time.time()
    try:
        start, end = parse_time(since, now), parse_time(until, now)
    except ValueError as exc:
        raise fail(f"--since/--until: {exc}", 2) from exc
    if end <= start:
        raise fail("--until must be after --since", 2)
    wanted = None
    if candidate is not None:
        try:
            wanted = msgspec.convert(yaml.safe_load(candidate.read_text()) or {}, Candidate)
        except (msgspec.ValidationError, yaml.YAMLError) as exc:
            raise fail(f"--config {candidate}: {exc}", 2) from exc

    async def run() -> "Comparison":
        database = await Database(settings.database.url).open(migrate_schema=False, listen=False)
        try:
            return await compare(
                database.engine,
                start,
                end,
                settings.scheduling,
                step or settings.scheduler.cycle_period,
                wanted,
                recorded_cycles=step is None,
            )
        finally:
            await database.close()

    try:
        comparison = asyncio.run(run())
    except (ValueError, msgspec.ValidationError) as exc:
        raise fail(f"--config {candidate}: {exc}", 2) from exc
    if html is not None:
        html.write_text(render_html(comparison))
    if as_json:
        print_json(comparison)
    else:
        typer.echo(render_text(comparison))
