"""Usage reports: the rollups of :mod:`armada.eventstore.usage` read back per group, with
shares, lost work and wait percentiles (``GET /v1/usage``, ``armada report usage``)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from armada.eventstore.store import EventStore
from armada.eventstore.usage_fold import LOST_OUTCOMES, WAIT_BUCKETS, resolution
from armada.eventstore.usage_views import UsageFigure, WaitFigure, usage_figures, wait_figures
from armada.model.durations import parse_duration
from armada.model.errors import InvalidRequest
from armada.model.wire.usage import UsageResponse, UsageRow, WaitFigures
from armada.services.queues import list_queues
from armada.services.visibility import ReadScope

#: The API's names of the rollups' dimensions (``by``), and their columns.
BY_NAMES = {
    "day": "day",
    "queue": "queue",
    "owner": "owner",
    "pool": "pool",
    "priorityClass": "priority_class",
}
#: The longest period one request may cover.
MAX_DAYS = 3660
DEFAULT_DAYS = 30
_DAYS = re.compile(r"(\d{1,4})d")
_RESOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9./_-]{0,252}")


def parse_day(text: str, field: str, today: date) -> date:
    """A day: ``YYYY-MM-DD``, an ISO time (its UTC day), or an age (``30d``, ``72h``) before ``today``."""
    text = text.strip()
    days = _DAYS.fullmatch(text)
    try:
        if days:
            return today - timedelta(days=int(days.group(1)))
        if len(text) == 10:
            return date.fromisoformat(text)
        if "T" in text:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).date()
        return today - timedelta(seconds=parse_duration(text))
    except (ValueError, OverflowError):
        raise InvalidRequest(
            f"{field}: {text!r} is neither a day (2026-11-01), a time (2026-11-01T12:00:00Z) "
            "nor an age (30d, 72h)",
            field=field,
        ) from None


def parse_by(text: str) -> list[str]:
    """The dimensions of ``by`` (comma separated, each once), as column names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in BY_NAMES]
    if unknown or len(set(names)) != len(names):
        known = ", ".join(BY_NAMES)
        raise InvalidRequest(f"by: {text!r} must list distinct dimensions among {known}", field="by")
    return [BY_NAMES[name] for name in names]


def parse_resources(text: str) -> list[str] | None:
    """The resources asked for (comma separated), ``None`` for all."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if not _RESOURCE.fullmatch(name):
            raise InvalidRequest(f"resource: {name!r} is not a resource name", field="resource")
    return names or None


class UsageQuery:
    """One usage request, checked: days ``since``..``until`` (inclusive), grouped ``by``."""

    def __init__(self, since: str, until: str, by: str, resource: str, today: date) -> None:
        self.until = parse_day(until, "until", today) if until else today
        self.since = parse_day(since, "since", today) if since else self.until - timedelta(days=DEFAULT_DAYS)
        if self.since > self.until:
            raise InvalidRequest(f"until: {self.until} is before since ({self.since})", field="until")
        if (self.until - self.since).days > MAX_DAYS:
            raise InvalidRequest(f"since: the period may cover at most {MAX_DAYS} days", field="since")
        self.by = parse_by(by)
        self.resources = parse_resources(resource)


async def usage_report(store: EventStore, reads: ReadScope, query: UsageQuery) -> UsageResponse:
    """The figures of the queues the caller may read."""
    since, until = query.since.isoformat(), query.until.isoformat()
    visible = await reads.queue_names()
    async with store.engine.connect() as conn:
        used = await usage_figures(conn, query.by, since, until, visible, query.resources)
        waits = await wait_figures(conn, query.by, since, until, visible)
    rows = _rows(query.by, used, waits)
    if "queue" in query.by and set(query.by) <= {"day", "queue", "pool"}:
        weights = {queue.name: 1 / queue.priority_factor for queue in await list_queues(store)}
        _fair_shares(query.by, rows, weights)
    by_names = {column: name for name, column in BY_NAMES.items()}
    return UsageResponse(since=since, until=until, by=[by_names[column] for column in query.by], rows=rows)


def _rows(by: Sequence[str], used: list[UsageFigure], waits: list[WaitFigure]) -> list[UsageRow]:
    names = {column: name for name, column in BY_NAMES.items()}
    rows: dict[tuple[str, ...], UsageRow] = {}

    def row(key: tuple[str, ...]) -> UsageRow:
        if key not in rows:
            named = {names[column]: value for column, value in zip(by, key, strict=True)}
            rows[key] = UsageRow(key=named, used={}, lost={}, preempted={}, by_outcome={}, share={})
        return rows[key]

    for figure in used:
        target = row(figure.key)
        seconds = float(figure.amount * resolution(figure.resource))
        _add(target.used, figure.resource, seconds)
        _add(target.by_outcome.setdefault(figure.outcome, {}), figure.resource, seconds)
        if figure.outcome in LOST_OUTCOMES:
            _add(target.lost, figure.resource, seconds)
        if figure.outcome == "preempted":
            _add(target.preempted, figure.resource, seconds)
    buckets: dict[tuple[str, ...], list[WaitFigure]] = defaultdict(list)
    for wait in waits:
        buckets[wait.key].append(wait)
    for key, figures in buckets.items():
        row(key).waits = wait_summary(figures)
    _shares(by, list(rows.values()))
    return [rows[key] for key in sorted(rows)]


def _add(figures: dict[str, float], resource: str, seconds: float) -> None:
    figures[resource] = figures.get(resource, 0.0) + seconds


def wait_summary(figures: Sequence[WaitFigure]) -> WaitFigures:
    """Mean and percentiles (bucket upper bounds; the last bucket reads as its lower bound)."""
    leases = sum(figure.leases for figure in figures)
    if not leases:
        return WaitFigures()
    ordered = sorted(figures, key=lambda figure: figure.bucket)

    def percentile(fraction: float) -> float:
        seen = 0
        for figure in ordered:
            seen += figure.leases
            if seen >= fraction * leases:
                return float(WAIT_BUCKETS[min(figure.bucket, len(WAIT_BUCKETS) - 1)])
        return float(WAIT_BUCKETS[-1])  # pragma: no cover - the loop reaches every lease

    mean = sum(figure.waited_ms for figure in figures) / leases / 1000
    return WaitFigures(
        leases=leases, mean=mean, p50=percentile(0.5), p90=percentile(0.9), p99=percentile(0.99)
    )


def _context(by: Sequence[str], row: UsageRow) -> tuple[str, ...]:
    """What a row's share is a share of: its day and pool, where ``by`` has them."""
    return tuple(row.key[name] for name in ("day", "pool") if name in by)


def _shares(by: Sequence[str], rows: list[UsageRow]) -> None:
    totals: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
    for row in rows:
        for resource, seconds in row.used.items():
            _add(totals[_context(by, row)], resource, seconds)
    for row in rows:
        total = totals[_context(by, row)]
        row.share = {
            resource: seconds / total[resource] for resource, seconds in row.used.items() if total[resource]
        }


def _fair_shares(by: Sequence[str], rows: list[UsageRow], weights: dict[str, float]) -> None:
    weight_sums: dict[tuple[str, ...], float] = defaultdict(float)
    for row in rows:
        weight_sums[_context(by, row)] += weights.get(row.key["queue"], 0.0)
    for row in rows:
        total = weight_sums[_context(by, row)]
        row.fair_share = weights.get(row.key["queue"], 0.0) / total if total else None
