"""``armada logs JOB_ID``: print a job's log; ``--follow`` keeps printing until the job ends.

Following asks again every ``--interval`` seconds for the lines since the last one printed
(``sinceTime``), as Lookout's Logs tab does; lines are never printed twice. While the job
waits for a node there is no log yet, and a busy or restarting executor (503) is only
reported: following goes on until the job ends. The job's text is printed with terminal
control characters escaped (:mod:`armada.cli.terminal_text`) unless ``--raw``.
"""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from armada.cli.connection import ContextOption, UrlOption, connect, fail

if TYPE_CHECKING:
    from armada.client import ArmadaClient
    from armada.model.wire.logs import LogLine, LogRequest

#: Job states after which no more lines will come.
_ENDED = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED", "REJECTED"})


def logs(
    job_id: Annotated[str, typer.Argument(help="The job whose log to print.")],
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until the job ends.")
    ] = False,
    tail: Annotated[
        int | None, typer.Option("--tail", min=0, help="Only the last N lines (to start with).")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only lines of the last DURATION (e.g. 10m, 1h30m).")
    ] = None,
    container: Annotated[str, typer.Option("--container", "-c", help="Container (default: the first).")] = "",
    run: Annotated[str, typer.Option("--run", help="Run id (default: the job's latest run).")] = "",
    timestamps: Annotated[bool, typer.Option("--timestamps", help="Prefix each line with its time.")] = False,
    raw: Annotated[
        bool,
        typer.Option(
            "--raw", help="Print the job's output as it is (terminal escapes too), not with controls escaped."
        ),
    ] = False,
    interval: Annotated[
        float, typer.Option("--interval", min=0.1, help="Seconds between asks when following.")
    ] = 1.0,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """Print the log of a job's latest run (running or finished, as long as its cluster keeps it)."""
    from armada.model.durations import parse_duration  # noqa: PLC0415 (start-up time)
    from armada.model.wire.logs import LogOptions, LogRequest  # noqa: PLC0415

    try:
        since_seconds = None if since is None else max(1, round(parse_duration(since)))
    except ValueError as exc:
        raise fail(f"--since: {exc}", 2) from exc
    options = LogOptions(container=container, tail_lines=tail, since_seconds=since_seconds)
    request = LogRequest(job_id=job_id, run_id=run, log_options=options)
    with connect(url, context) as client:
        if not follow:
            _print(client.job_logs(request), timestamps, raw)
            return
        try:
            _follow(client, request, timestamps, raw, interval)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None


def _follow(
    client: "ArmadaClient", request: "LogRequest", timestamps: bool, raw: bool, interval: float
) -> None:
    import time  # noqa: PLC0415

    import msgspec  # noqa: PLC0415

    from armada.client import ArmadaApiError  # noqa: PLC0415

    last: datetime | None = None
    while True:
        ended = client.job_status([request.job_id]).get(request.job_id) in _ENDED
        try:
            lines = client.job_logs(request)
        except ArmadaApiError as exc:
            if exc.status not in (404, 503) or (ended and exc.status == 404):
                raise
            if exc.status == 503:
                typer.echo(f"warning: {exc.detail}", err=True)
            lines = []
        fresh = [line for line in lines if last is None or _when(line.timestamp, last) > last]
        _print(fresh, timestamps, raw)
        if fresh and fresh[-1].timestamp:
            last = _when(fresh[-1].timestamp, last)
            options = msgspec.structs.replace(request.log_options, tail_lines=None, since_seconds=None)
            request = msgspec.structs.replace(request, since_time=fresh[-1].timestamp, log_options=options)
        if ended:
            return
        time.sleep(interval)


def _when(stamp: str, otherwise: datetime | None) -> datetime:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return otherwise or datetime.min


def _print(lines: "list[LogLine]", timestamps: bool, raw: bool) -> None:
    from armada.cli.terminal_text import escape_controls  # noqa: PLC0415 (start-up time)

    for line in lines:
        text = f"{line.timestamp} {line.line}" if timestamps and line.timestamp else line.line
        typer.echo(text if raw else escape_controls(text))
