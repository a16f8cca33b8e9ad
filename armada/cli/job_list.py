"""``armada jobs``: list jobs like ``squeue`` or ``kubectl get``.

The listing is Lookout's jobs table (``POST /api/v1/jobs``): the same query, the same
filters and the same read rights (the queues the caller may watch), so the CLI and the UI
never disagree about which jobs exist. ``--owner me`` asks the server who the credentials
are (``/v1/whoami``): the owner recorded on a job is that name, which for single sign-on
users carries a prefix the user may not know. ``--watch`` follows the log's head
(``/api/v1/changes``) and prints the rows that changed each time it moves.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from armada.cli.connection import ContextOption, UrlOption, connect, fail
from armada.cli.terminal_text import escape_controls

if TYPE_CHECKING:
    from armada.client import ArmadaClient
    from armada.lookout.wire import JobFilter, JobRow, JobStateName

STATES = ("QUEUED", "LEASED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+)([smhdw])")
#: Rows one request reads (the server's largest page).
PAGE = 500
#: Longest listing: a deeper offset is refused by the server (narrow the filter instead).
MAX_LIMIT = 10_000


class Output(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"


def parse_since(text: str) -> timedelta:
    """``90s``, ``15m``, ``1h30m``, ``2d``, ``1w``: how far back submission may lie."""
    compact = text.strip().lower()
    if not compact or _DURATION.sub("", compact):
        raise ValueError(f"--since {text!r} is not a duration such as 30m, 1h or 2d")
    return timedelta(seconds=sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(compact)))


def parse_states(values: Sequence[str]) -> list[JobStateName]:
    """``running,queued`` (comma-separated, repeatable, any case) as state names."""
    states = [part.strip().upper() for value in values for part in value.split(",") if part.strip()]
    unknown = [state for state in states if state not in STATES]
    if unknown:
        known = ", ".join(state.lower() for state in STATES)
        raise ValueError(f"--state {unknown[0].lower()!r} is not one of {known}")
    return cast("list[JobStateName]", sorted(set(states)))


def age(since: datetime, now: datetime) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``: the largest whole unit, as ``kubectl get`` shows it."""
    seconds = max(0, int((now - since).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _resources(row: JobRow) -> tuple[str, str, str]:
    cpu = f"{row.cpu_millis // 1000}" if row.cpu_millis % 1000 == 0 else f"{row.cpu_millis}m"
    memory = row.memory_bytes
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if memory >= size and memory % size == 0:
            return cpu, f"{memory // size}{unit}", str(row.gpu)
    return cpu, str(memory), str(row.gpu)


Column = tuple[str, Callable[["JobRow", datetime], str]]
COLUMNS: list[Column] = [
    ("JOB ID", lambda row, now: row.job_id),
    ("QUEUE", lambda row, now: row.queue),
    ("JOB SET", lambda row, now: row.job_set),
    ("STATE", lambda row, now: row.state),
    ("AGE", lambda row, now: age(row.submitted, now)),
]
WIDE_COLUMNS: list[Column] = [
    *COLUMNS,
    ("OWNER", lambda row, now: row.owner),
    ("PRIORITY", lambda row, now: f"{row.priority:g}"),
    ("CPU", lambda row, now: _resources(row)[0]),
    ("MEMORY", lambda row, now: _resources(row)[1]),
    ("GPU", lambda row, now: _resources(row)[2]),
    ("CLUSTER", lambda row, now: row.cluster),
    ("NODE", lambda row, now: row.node),
    ("REASON", lambda row, now: row.reason),
]
#: Columns that give up width when a table is wider than the terminal (never the id or state).
SHRINKABLE = frozenset({"QUEUE", "JOB SET", "OWNER", "CLUSTER", "NODE", "REASON"})
MIN_WIDTH = 6


def fitted(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Lines of a table no wider than ``width`` where possible: the widest shrinkable column
    gives up a character at a time (its cells end with ``…``) until the table fits."""
    widths = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(header)]
    gaps = 2 * (len(header) - 1)
    while sum(widths) + gaps > width:
        candidates = [i for i, name in enumerate(header) if name in SHRINKABLE and widths[i] > MIN_WIDTH]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: widths[i])
        widths[widest] -= 1

    def line(cells: Sequence[str]) -> str:
        pairs = zip(cells, widths, strict=True)
        shown = [cell if len(cell) <= room else cell[: room - 1] + "…" for cell, room in pairs]
        return "  ".join(cell.ljust(w) for cell, w in zip(shown, widths, strict=True)).rstrip()

    return [line(header), *(line(row) for row in rows)]


def render(rows: Sequence[JobRow], output: Output, *, header: bool = True) -> Iterator[str]:
    """Lines printing ``rows`` in ``output`` format (watch updates: without the table header)."""
    import msgspec  # noqa: PLC0415 (start-up time: see armada.cli.connection)

    if output is Output.name:
        yield from (row.job_id for row in rows)
    elif output is Output.json:
        if header:
            yield msgspec.json.format(msgspec.json.encode(list(rows)), indent=2).decode()
        else:  # watching: one job per line, so that a reader can act on each as it comes
            yield from (msgspec.json.encode(row).decode() for row in rows)
    elif output is Output.yaml:
        import yaml  # noqa: PLC0415

        for row in rows:
            yield "---\n" + yaml.safe_dump(msgspec.to_builtins(row), sort_keys=False).rstrip()
    else:
        columns = WIDE_COLUMNS if output is Output.wide else COLUMNS
        now = datetime.now(UTC)
        cells = [[escape_controls(show(row, now)) for _, show in columns] for row in rows]
        width = shutil.get_terminal_size((200 if output is Output.wide else 120, 24)).columns
        lines = fitted([name for name, _ in columns], cells, width)
        yield from lines if header else lines[1:]


def fetch(client: ArmadaClient, job_filter: JobFilter, limit: int) -> tuple[list[JobRow], bool]:
    """Up to ``limit`` matching jobs, newest first, and whether more match."""
    from armada.lookout.wire import JobsRequest  # noqa: PLC0415

    found: list[JobRow] = []
    while True:
        take = min(PAGE, limit - len(found))
        page = client.list_jobs(JobsRequest(filter=job_filter, skip=len(found), take=take))
        found += page.jobs
        if not page.has_more or len(found) >= limit:
            return found, page.has_more


def jobs(
    queue: Annotated[str, typer.Option("--queue", "-q", help="Only this queue's jobs.")] = "",
    job_set: Annotated[str, typer.Option("--job-set", "-s", help="Only this job set's jobs.")] = "",
    state: Annotated[
        list[str] | None,
        typer.Option("--state", help="Only jobs in these states: running,queued (repeatable)."),
    ] = None,
    owner: Annotated[str, typer.Option("--owner", help="Only this user's jobs; 'me': yours.")] = "",
    since: Annotated[
        str, typer.Option("--since", help="Only jobs submitted this recently: 30m, 1h, 2d.")
    ] = "",
    output: Annotated[Output, typer.Option("--output", "-o", help="table, wide, json, yaml or name.")] = (
        Output.table
    ),
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="Most jobs to list (newest first).")
    ] = 100,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Then print jobs as they change.")] = False,
    url: UrlOption = None,
    context: ContextOption = None,
) -> None:
    """List jobs you may read, newest first (like squeue or kubectl get)."""
    from armada.lookout.wire import JobFilter  # noqa: PLC0415

    try:
        states = parse_states(state or [])
        submitted_from = datetime.now(UTC) - parse_since(since) if since else None
    except ValueError as exc:
        raise fail(str(exc), 2) from exc
    with connect(url, context) as client:
        owner_name = client.whoami().name if owner == "me" else owner
        job_filter = JobFilter(
            queue=queue, job_set=job_set, states=states, owner=owner_name, submitted_from=submitted_from
        )
        rows, more = fetch(client, job_filter, limit)
        for line in render(rows, output):
            typer.echo(line)
        if more:
            typer.echo(f"(more than {len(rows)} jobs match: narrow the filter or raise --limit)", err=True)
        if watch:
            _follow(client, job_filter, limit, rows, output)


def _follow(
    client: ArmadaClient, job_filter: JobFilter, limit: int, shown: list[JobRow], output: Output
) -> None:
    """Print the rows that are new or changed each time the log's head moves (until interrupted)."""
    seen: dict[str, Any] = {row.job_id: _version(row) for row in shown}
    for _head in client.changes():
        rows, _more = fetch(client, job_filter, limit)
        changed = [row for row in rows if seen.get(row.job_id) != _version(row)]
        seen.update((row.job_id, _version(row)) for row in changed)
        for line in render(changed, output, header=False):
            typer.echo(line)


def _version(row: JobRow) -> tuple[str, datetime, str, str]:
    return row.state, row.last_transition, row.cluster, row.node
