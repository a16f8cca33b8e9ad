"""``armada report``: why jobs are (not) running, from the server's scheduling reports."""

from collections.abc import Callable
from typing import TYPE_CHECKING

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
