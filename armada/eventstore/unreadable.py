"""Stored records that cannot be decoded: skipped where they are met, reported once, never fatal.

A stored event, view row or job spec that a bug or an older version wrote in a form this
version cannot decode (or a newer version, in a type this one does not know) must not stop
the log follower, a lease call, a scheduling cycle, an event stream or a listing. Readers
decode stored records through :class:`UnreadableRecords`: a record that fails is logged once
(with its seq or id), counted (the server exports the counts as
``armada_undecodable_records_total``), handed to the listeners (the server fails the job it
belongs to, through an event, unless the event is of a newer version's type), and the reader
skips it and goes on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

import msgspec
import structlog
from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.eventstore.recent import StoredEvent
from armada.model.events import EVENT_TYPES, EventDecoder, ReadEvent, UnreadableEvent, decode_event

log = structlog.get_logger(__name__)

T = TypeVar("T")
#: What kind of record: a log event, a job's stored spec, a queue's, or a node's.
RecordKind = Literal["event", "job", "queue", "node", "retry policy"]


class UnreadableRecord(NamedTuple):
    kind: RecordKind
    #: The event's seq, the job id, the queue name, or ``executor/node``.
    key: str
    error: str
    #: The job the record belongs to, if any.
    job_id: str = ""
    #: An event of a type this version does not know: written by a newer version during a
    #: rolling upgrade, it is skipped here and its job left alone.
    newer: bool = False


class UnreadableRecords:
    """The unreadable records one process has met, each reported the first time only."""

    def __init__(self) -> None:
        self.counts: Counter[RecordKind] = Counter()
        #: Called once per record; must not block (schedule any I/O as a task).
        self.listeners: list[Callable[[UnreadableRecord], None]] = []
        self._seen: set[tuple[RecordKind, str]] = set()

    def report(self, record: UnreadableRecord) -> None:
        if (record.kind, record.key) in self._seen:
            return
        self._seen.add((record.kind, record.key))
        self.counts[record.kind] += 1
        (log.warning if record.newer else log.error)(
            "stored event of a newer version skipped" if record.newer else "unreadable stored record skipped",
            kind=record.kind,
            key=record.key,
            job_id=record.job_id or None,
            error=record.error,
        )
        for listener in self.listeners:
            listener(record)

    def decode(
        self, decode: Callable[[Any], T], data: Any, kind: RecordKind, key: str, job_id: str = ""
    ) -> T | None:
        """``decode(data)``, or ``None`` (reported) if the record cannot be decoded."""
        try:
            return decode(data)
        except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
            self.report(UnreadableRecord(kind, key, str(exc), job_id))
            return None


async def decode_log_rows(
    conn: AsyncConnection,
    rows: Sequence[Row[int, bytes]],
    records: UnreadableRecords,
    decode: EventDecoder = decode_event,
) -> list[StoredEvent]:
    """Decode ``(seq, payload)`` rows of the log; an unreadable one becomes an
    :class:`~armada.model.events.UnreadableEvent` with its envelope from the log's columns."""
    decoded: list[ReadEvent | None] = []
    failed: dict[int, str] = {}
    for seq, payload in rows:
        try:
            decoded.append(decode(payload))
        except msgspec.DecodeError as exc:
            decoded.append(None)
            failed[seq] = str(exc)
    standins = await _standins(conn, failed, records) if failed else {}
    return [
        StoredEvent(seq, event if event is not None else standins[seq])
        for (seq, _), event in zip(rows, decoded, strict=True)
    ]


async def _standins(
    conn: AsyncConnection, failed: dict[int, str], records: UnreadableRecords
) -> dict[int, UnreadableEvent]:
    events = schema.events
    envelope = (events.c.queue, events.c.job_set_id, events.c.job_id, events.c.run_id)
    query = select(events.c.seq, events.c.type, *envelope).where(events.c.seq.in_(list(failed)))
    found = {}
    for row in await conn.execute(query):
        error = failed[row.seq]
        newer = row.type not in EVENT_TYPES
        records.report(UnreadableRecord("event", str(row.seq), error, row.job_id, newer))
        found[row.seq] = UnreadableEvent(
            queue=row.queue,
            job_set_id=row.job_set_id,
            job_id=row.job_id,
            run_id=row.run_id,
            stored_type=row.type,
            error=error,
        )
    return found
