"""``armada report``: why jobs are (not) running, from the server's scheduling reports, and
who used what (``armada report usage``)."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from armada.cli.connection import ContextOption, JsonOption, UrlOption, connect, print_json

if TYPE_CHECKING:  # the client loads when a command connects (start-up time)
    from armada.client import ArmadaClient
    from armada.reports.wire import JobReport, QueueReport, SchedulingReport

    Report = SchedulingReport | QueueReport | JobReport

app = typer.Typer(help="Scheduling reports: why jobs are or are not running.", no_args_is_help=True)


def _show(
    url: str | None, context: str | None, as_json: bool, fetch: "Callable[[ArmadaClient], Report]"
) -> None:
    """Print the report: the server's text rendering, or the whole body as JSON."""
    with connect(url, context) as client:
        report = fetch(client)
    if as_json:
        print_json(report)
    else:
        typer.echo(report.report)


@app.command("scheduling")
def scheduling(url: UrlOption = None, context: ContextOption = None, as_json: JsonOption = False) -> None:
    """The last scheduling cycles: duration, decisions, shares and top reasons."""
    _show(url, context, as_json, lambda client: client.scheduling_report())


@app.command("queue")
def queue(
    name: str, url: UrlOption = None, context: ContextOption = None, as_json: JsonOption = False
) -> None:
    """A queue's shares, limits hit and why each of its scheduling keys waits."""
    _show(url, context, as_json, lambda client: client.queue_report(name))


@app.command("job")
def job(
    job_id: str, url: UrlOption = None, context: ContextOption = None, as_json: JsonOption = False
) -> None:
    """Why one job waits (position, reason), or where and when it was leased."""
    _show(url, context, as_json, lambda client: client.job_report(job_id))


@app.command("usage")
def usage(
    since: Annotated[str, typer.Option(help="First day: 2026-11-01, or an age (30d, 72h).")] = "30d",
    until: Annotated[str, typer.Option(help="Last day (default: today, UTC).")] = "",
    by: Annotated[str, typer.Option(help="Group by: day, queue, owner, pool, priorityClass.")] = "queue",
    resource: Annotated[str, typer.Option(help="Only these resources (comma separated).")] = "",
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    url: UrlOption = None,
    context: ContextOption = None,
    as_json: JsonOption = False,
) -> None:
    """Resource-hours used per group, share of the pool, work lost (to preemption) and wait
    percentiles, like Slurm's ``sreport`` (docs/accounting.md)."""
    from armada.cli.usage_table import render_csv, render_table  # noqa: PLC0415

    with connect(url, context) as client:
        report = client.usage(since, until, by, resource)
    if as_json:
        print_json(report)
    else:
        typer.echo(render_csv(report) if as_csv else render_table(report), nl=not as_csv)
