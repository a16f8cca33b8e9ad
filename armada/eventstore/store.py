"""The event store: append events with their view updates atomically, read them back.

``append`` is all or nothing: the events and every view change they imply commit in one
transaction, or nothing does. Appends are serialised (in-process lock plus a database
lock), so sequence numbers are dense and readers never see a later seq before an earlier
one. The log is only ever inserted into.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from armada.eventstore import dialects, projections, schema
from armada.eventstore.changed import ChangedJobs
from armada.eventstore.notify import ChangeNotifier
from armada.eventstore.recent import RecentEvents, StoredEvent
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.eventstore.writelock import WriteLock
from armada.model.events import Event, EventDecoder, decode_event, encode_event

__all__ = ["Draft", "EventStore", "PreparedEvents", "StoredEvent", "Transaction", "log_row"]


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


class Transaction:
    """A write transaction: read the views consistently, then stage events to append.

    Obtained from :meth:`EventStore.transaction`; the staged events are appended when the
    ``async with`` block exits without error, and discarded with everything else if not.
    """

    def __init__(self, connection: AsyncConnection, head: int, changed: ChangedJobs) -> None:
        self.connection = connection
        #: Sequence number of the newest event before this transaction's own.
        self.head = head
        self.staged: list[Event] = []
        self._prepared: PreparedEvents | None = None
        self._changed = changed

    def append(self, events: Sequence[Event] | PreparedEvents) -> None:
        if isinstance(events, PreparedEvents):
            self._prepared = events if not self.staged else None
            self.staged.extend(events.events)
        else:
            self._prepared = None
            self.staged.extend(events)

    async def jobs_changed_since(self, seq: int, job_ids: Collection[str]) -> set[str]:
        """Those of ``job_ids`` with events appended after ``seq``.

        Answered from memory when this process made every append since ``seq`` (the common
        case: one replica), else from the log.
        """
        wanted = set(job_ids)
        known = self._changed.among(wanted, seq, self.head)
        if known is not None:
            return known
        events = schema.events
        query = select(events.c.job_id).distinct().where(events.c.seq > seq)
        return wanted.intersection(await self.connection.scalars(query))

    def prepared(self) -> PreparedEvents:
        """Everything staged, prepared: the caller's own preparation when it covers it all."""
        if self._prepared is not None and len(self._prepared.events) == len(self.staged):
            return self._prepared
        return PreparedEvents(self.staged)


class Draft(Protocol):
    """Events a write built from the views, and the jobs whose view rows it read."""

    @property
    def events(self) -> Sequence[Event]: ...

    @property
    def job_ids(self) -> Collection[str]: ...


DraftT = TypeVar("DraftT", bound=Draft)


class EventStore:
    def __init__(self, engine: AsyncEngine, notifier: ChangeNotifier | None = None) -> None:
        self.engine = engine
        self.notifier = notifier or ChangeNotifier()
        self._append_lock = WriteLock()
        self._recent = RecentEvents()
        self._changed = ChangedJobs()
        #: Called with each committed batch of events (metrics); must be cheap and not raise.
        self.listeners: list[Callable[[Sequence[Event]], None]] = []
        #: Stored records this process could not decode (every reader reports here).
        self.unreadable = UnreadableRecords()

    @asynccontextmanager
    async def transaction(self, *, urgent: bool = False) -> AsyncIterator[Transaction]:
        """Serialised write transaction whose staged events are appended on success.

        ``urgent`` writes (scheduling decisions) overtake others waiting in this process.
        """
        await self._append_lock.acquire(urgent=urgent)
        try:
            async with self.engine.connect() as raw:
                conn = await raw.execution_options(**{dialects.WRITE_OPTION: True})
                async with conn.begin():
                    tx = Transaction(conn, await dialects.lock_log(conn), self._changed)
                    yield tx
                    head = await self._write(conn, tx.prepared(), tx.head) if tx.staged else 0
                if head:  # committed
                    first = head - len(tx.staged) + 1
                    self._recent.add(first, tx.staged)
                    self._changed.add(first, head, (event.job_id for event in tx.staged))
        finally:
            self._append_lock.release()
        if head:
            self.notifier.publish(head)
            for listener in self.listeners:
                listener(tx.staged)

    async def append_optimistically(
        self, build: Callable[[AsyncConnection], Awaitable[DraftT]], *, urgent: bool = False
    ) -> DraftT:
        """Append what ``build`` makes of the views, having read them outside the lock.

        Under load a write spends most of its time queued for the serialised append, so
        ``build`` first runs on a plain connection and its events are prepared before the
        lock is taken. Inside, if any job it read changed meanwhile (a cancellation landed,
        say), it runs again on the transaction's connection and that draft is appended
        instead. ``build`` must read nothing but those jobs' (and their runs') rows.
        """
        async with self.engine.connect() as conn:
            seen = await dialects.log_head(conn)
            draft = await build(conn)
        return await self.append_checked(draft, seen, build, urgent=urgent)

    async def append_checked(
        self,
        draft: DraftT,
        seen: int,
        rebuild: Callable[[AsyncConnection], Awaitable[DraftT]],
        *,
        urgent: bool = False,
    ) -> DraftT:
        """Append ``draft``, built from the views as of ``seq`` ``seen``, or ``rebuild`` it.

        The draft's events are prepared before the lock; inside it, if any of its jobs has
        changed after ``seen``, ``rebuild`` runs on the transaction's connection and its
        draft is appended instead.
        """
        prepared = PreparedEvents(draft.events)
        async with self.transaction(urgent=urgent) as tx:
            if await tx.jobs_changed_since(seen, draft.job_ids):
                draft = await rebuild(tx.connection)
                tx.append(draft.events)
            else:
                tx.append(prepared)
        return draft

    async def append(self, events: Sequence[Event]) -> int:
        """Append ``events`` (and their view updates) atomically; return the last seq."""
        if not events:
            return await self.head()
        async with self.transaction() as tx:
            tx.append(events)
        return self.notifier.head

    async def _write(self, conn: AsyncConnection, batch: PreparedEvents, head: int) -> int:
        events = batch.events
        rows = [
            log_row(head + offset, event, payload)
            for offset, (event, payload) in enumerate(zip(events, batch.payloads, strict=True), start=1)
        ]
        await dialects.insert_rows(conn, schema.events, rows)
        last = head + len(events)
        await projections.insert_rows(conn, batch.changes)
        async with dialects.pipeline(conn):  # under load, each round trip waits for the loop
            await projections.update_rows(conn, batch.changes)
            await dialects.notify(conn, last)
        await projections.apply_ordered(conn, batch.changes)
        return last

    async def head(self) -> int:
        """Sequence number of the newest committed event (0 for an empty log)."""
        async with self.engine.connect() as conn:
            return await dialects.log_head(conn)

    async def read(
        self,
        after_seq: int = 0,
        *,
        queue: str | None = None,
        job_set_id: str | None = None,
        job_id: str | None = None,
        until_seq: int | None = None,
        limit: int = 1000,
        decode: EventDecoder = decode_event,
    ) -> list[StoredEvent]:
        """Events after ``after_seq`` (exclusive), oldest first, optionally of one job set or job.

        ``decode`` reads the payloads fetched from the database (a reader that only re-encodes
        events can skip building parts it copies verbatim); recent events kept in memory are
        returned as decoded when appended."""
        if queue is None and job_set_id is None and job_id is None:
            known_head = self.notifier.head if until_seq is None else min(until_seq, self.notifier.head)
            recent = self._recent.after(after_seq, known_head, limit)
            if recent is not None:
                return [stored for stored in recent if until_seq is None or stored.seq <= until_seq]
        events = schema.events
        query = select(events.c.seq, events.c.payload).where(events.c.seq > after_seq)
        if queue is not None:
            query = query.where(events.c.queue == queue)
        if job_set_id is not None:
            query = query.where(events.c.job_set_id == job_set_id)
        if job_id is not None:
            query = query.where(events.c.job_id == job_id)
        if until_seq is not None:
            query = query.where(events.c.seq <= until_seq)
        query = query.order_by(events.c.seq).limit(limit)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
            return await decode_log_rows(conn, rows, self.unreadable, decode)

    async def wait_for_change(self, after_seq: int, timeout: float | None = None) -> int:
        """Wait until an event after ``after_seq`` commits (or timeout); return the head."""
        return await self.notifier.wait(after_seq, timeout)
