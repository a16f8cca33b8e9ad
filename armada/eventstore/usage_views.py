"""Usage accounting's read side: the rollups summed per group over a range of days."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema

#: The dimensions figures can be grouped by (column names).
DIMENSIONS = ("day", "queue", "owner", "pool", "priority_class")


class UsageFigure(NamedTuple):
    key: tuple[str, ...]
    outcome: str
    resource: str
    amount: int


class WaitFigure(NamedTuple):
    key: tuple[str, ...]
    bucket: int
    leases: int
    waited_ms: int


def _filtered(query: Any, table: Any, since: str, until: str, queues: Collection[str] | None) -> Any:
    query = query.where(table.c.day >= since, table.c.day <= until)
    return query if queues is None else query.where(table.c.queue.in_(sorted(queues)))


async def usage_figures(
    conn: AsyncConnection,
    by: Sequence[str],
    since: str,
    until: str,
    queues: Collection[str] | None,
    resources: Collection[str] | None,
) -> list[UsageFigure]:
    """Resource-seconds (in units of each resource's resolution) per group of ``by``, outcome
    and resource, for days ``since``..``until`` (``YYYY-MM-DD``, inclusive), both parts added
    up; only ``queues`` and ``resources`` when given."""
    usage = schema.usage
    keys = [usage.c[name] for name in by]
    query = select(*keys, usage.c.outcome, usage.c.resource, func.sum(usage.c.amount))
    query = _filtered(query, usage, since, until, queues)
    if resources is not None:
        query = query.where(usage.c.resource.in_(sorted(resources)))
    query = query.group_by(*keys, usage.c.outcome, usage.c.resource)
    width = len(keys)
    return [
        UsageFigure(tuple(row[:width]), row[width], row[width + 1], int(row[width + 2]))
        for row in await conn.execute(query)
    ]


async def wait_figures(
    conn: AsyncConnection, by: Sequence[str], since: str, until: str, queues: Collection[str] | None
) -> list[WaitFigure]:
    """Leases and milliseconds waited per group of ``by`` and wait bucket."""
    waits = schema.usage_waits
    keys = [waits.c[name] for name in by]
    query = select(*keys, waits.c.bucket, func.sum(waits.c.leases), func.sum(waits.c.waited))
    query = _filtered(query, waits, since, until, queues).group_by(*keys, waits.c.bucket)
    width = len(keys)
    return [
        WaitFigure(tuple(row[:width]), int(row[width]), int(row[width + 1]), int(row[width + 2]))
        for row in await conn.execute(query)
    ]
