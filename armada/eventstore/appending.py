"""Writing a batch of events: log rows, view changes folded ahead of the lock, the bulk write."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, projections, schema, usage
from armada.eventstore.usage_memory import KnownFacts
from armada.model.events import Event, encode_event


def log_row(seq: int, event: Event, payload: bytes) -> dict[str, object]:
    """The ``events`` row of ``event`` at ``seq``: its envelope in columns, then its payload."""
    return {
        "seq": seq,
        "created": event.created,
        "queue": event.queue,
        "job_set_id": event.job_set_id,
        "job_id": event.job_id,
        "run_id": event.run_id,
        "type": event.type,
        "payload": payload,
    }


class PreparedEvents:
    """Events serialised and folded into their view changes ahead of the write lock.

    Preparing needs no database; doing it before :meth:`EventStore.transaction` shortens the
    time during which appends are serialised (submission prepares its whole request).
    """

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = list(events)
        self.payloads = [encode_event(event) for event in self.events]
        self.changes = projections.ViewChanges().add_all(self.events)

    @classmethod
    def combine(cls, parts: Sequence[PreparedEvents]) -> PreparedEvents:
        """Several writers' batches as one, in order: one bulk write for all of them."""
        if len(parts) == 1:
            return parts[0]
        combined = cls(())
        for part in parts:
            combined.events += part.events
            combined.payloads += part.payloads
            combined.changes.merge(part.changes)
        return combined


async def write(
    conn: AsyncConnection, batch: PreparedEvents, head: int, *, notify: bool, known: KnownFacts | None = None
) -> int:
    """Write ``batch`` after seq ``head`` with its view changes; return the new head.

    ``notify`` sends the change notification too (PostgreSQL delivers it at commit);
    ``known``: usage accounting's facts of earlier batches (:mod:`.usage_memory`).
    """
    rows = [
        log_row(seq, event, payload)
        for seq, (event, payload) in enumerate(zip(batch.events, batch.payloads, strict=True), start=head + 1)
    ]
    last = head + len(rows)
    counted = await usage.count(conn, usage.counted(batch.events), known)  # (the views before the batch)

    async def inserts() -> None:
        await dialects.insert_rows(conn, schema.events, rows)
        await projections.insert_rows(conn, batch.changes)

    async def updates() -> None:
        await projections.update_rows(conn, batch.changes)
        if notify:
            await dialects.notify(conn, last)

    # Under load each round trip waits for the loop: a small batch's inserts are pipelined
    # with its updates (one round trip for the whole write); a large one's COPYs cannot be.
    changes = batch.changes
    small = max(len(rows), len(changes.jobs.inserts), len(changes.runs.inserts)) <= dialects.SMALL_INSERT_ROWS
    if not small:
        await inserts()
    async with dialects.pipeline(conn):
        if small:
            await inserts()
        await updates()
    await projections.apply_ordered(conn, batch.changes)
    await usage.add(conn, counted)
    return last
