"""The ``lookout_views`` view: write side (from ``lookoutView*`` events) and its reads.

Saved views are configuration a user keeps, so they go through the log like queues and
retry policies: a replay (``armada admin rebuild-views``) restores them, and retention,
which only removes expired jobs' events, never touches them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.eventstore.views import utc
from armada.model import events as ev

_table = schema.lookout_views


class StoredView(NamedTuple):
    name: str
    state: dict[str, Any]
    updated: datetime


def _one(user: str, name: str) -> Any:
    return and_(_table.c.user_name == user, _table.c.name == name)


async def apply_saved_view_event(
    conn: AsyncConnection, event: ev.LookoutViewSaved | ev.LookoutViewDeleted
) -> None:
    """Apply one saved-view event in log order (a person's clicks: no batching needed)."""
    if isinstance(event, ev.LookoutViewDeleted):
        await conn.execute(delete(_table).where(_one(event.user, event.name)))
        return
    values = {"state": event.state, "updated": event.created}
    result = await conn.execute(update(_table).where(_one(event.user, event.name)).values(values))
    if result.rowcount == 0:
        await conn.execute(insert(_table).values(user_name=event.user, name=event.name, **values))


async def user_views(conn: AsyncConnection, user: str) -> list[StoredView]:
    """``user``'s views by name."""
    query = (
        select(_table.c.name, _table.c.state, _table.c.updated)
        .where(_table.c.user_name == user)
        .order_by(_table.c.name)
    )
    return [StoredView(row.name, row.state, utc(row.updated)) for row in await conn.execute(query)]


async def user_view(conn: AsyncConnection, user: str, name: str) -> StoredView | None:
    query = select(_table.c.name, _table.c.state, _table.c.updated).where(_one(user, name))
    row = (await conn.execute(query)).first()
    return None if row is None else StoredView(row.name, row.state, utc(row.updated))


async def count_views(conn: AsyncConnection, user: str) -> int:
    query = select(func.count()).select_from(_table).where(_table.c.user_name == user)
    return int((await conn.execute(query)).scalar_one())
