"""``armada report``: why jobs are (not) running, from the server's scheduling reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import httpx
import msgspec
import typer

from armada.client import ArmadaApiError, ArmadaClient, ConfigError, load_config
from armada.reports import render

app = typer.Typer(help="Scheduling reports: why jobs are or are not running.", no_args_is_help=True)

T = TypeVar("T")

UrlOption = Annotated[
    str | None, typer.Option("--url", help="Server URL (default: ARMADA_URL, then contexts).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]


def _show(
    url: str | None, as_json: bool, fetch: Callable[[ArmadaClient], T], text: Callable[[T], str]
) -> None:
    try:
        with ArmadaClient(load_config(url)) as client:
            report = fetch(client)
    except (ArmadaApiError, ConfigError, httpx.HTTPError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(msgspec.json.format(msgspec.json.encode(report)).decode() if as_json else text(report))


@app.command("scheduling")
def scheduling(url: UrlOption = None, as_json: JsonOption = False) -> None:
    """The last scheduling cycles: duration, decisions, shares and top reasons."""
    _show(url, as_json, lambda client: client.scheduling_report(), render.scheduling)


@app.command("queue")
def queue(name: str, url: UrlOption = None, as_json: JsonOption = False) -> None:
    """A queue's shares, limits hit and why each of its scheduling keys waits."""
    _show(url, as_json, lambda client: client.queue_report(name), render.queue)


@app.command("job")
def job(job_id: str, url: UrlOption = None, as_json: JsonOption = False) -> None:
    """Why one job waits (position, reason), or where and when it was leased."""
    _show(url, as_json, lambda client: client.job_report(job_id), render.job)
