"""Rebuild the views by replaying the whole log: the proof that the log is the truth."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, projections, schema, usage
from armada.eventstore.store import EventStore
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.model.events import UnreadableEvent

REPLAY_BATCH = 5000


async def rebuild_views(store: EventStore, *, batch: int = REPLAY_BATCH) -> int:
    """Empty every view and re-apply all events in one transaction; return events replayed."""
    async with store.transaction() as tx:
        return await replay_into(await tx.views(), store.unreadable, batch=batch)


async def replay_into(conn: AsyncConnection, records: UnreadableRecords, *, batch: int = REPLAY_BATCH) -> int:
    """Empty the views and re-apply the log inside the caller's (locked) transaction.

    An event that cannot be decoded is reported to ``records`` and left out: the views hold
    what the readable log says (``armada admin check`` lists what was left out).
    """
    for table in reversed(schema.VIEWS):
        await conn.execute(delete(table))
    await usage.forget_log_part(conn)  # (the figures of pruned jobs stay)
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
        stored = await decode_log_rows(conn, rows, records)
        readable = [event for _seq, event in stored if not isinstance(event, UnreadableEvent)]
        counted = await usage.count(conn, usage.counted(readable))  # (before the batch's changes)
        await projections.apply(conn, projections.ViewChanges().add_all(readable))
        await usage.add(conn, counted)
        after = rows[-1][0]
        replayed += len(rows)
    return replayed
