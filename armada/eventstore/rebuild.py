"""Rebuild the views by replaying the whole log: the proof that the log is the truth."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, projections, schema
from armada.eventstore.store import EventStore
from armada.model.events import decode_event

REPLAY_BATCH = 5000


async def rebuild_views(store: EventStore, *, batch: int = REPLAY_BATCH) -> int:
    """Empty every view and re-apply all events in one transaction; return events replayed."""
    async with store.transaction() as tx:
        return await replay_into(tx.connection, batch=batch)


async def replay_into(conn: AsyncConnection, *, batch: int = REPLAY_BATCH) -> int:
    """Empty the views and re-apply the log inside the caller's (locked) transaction."""
    for table in reversed(schema.VIEWS):
        await conn.execute(delete(table))
    head = await dialects.log_head(conn)
    after = replayed = 0
    while after < head:
        result = await conn.execute(
            select(schema.events.c.seq, schema.events.c.payload)
            .where(schema.events.c.seq > after)
            .order_by(schema.events.c.seq)
            .limit(batch)
        )
        rows = result.all()
        changes = projections.ViewChanges().add_all(decode_event(payload) for _seq, payload in rows)
        await projections.apply(conn, changes)
        after = rows[-1][0]
        replayed += len(rows)
    return replayed
