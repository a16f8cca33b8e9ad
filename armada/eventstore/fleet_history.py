"""Compaction of the fleet's sign-of-life history: old heartbeats and node reports.

An executor records a heartbeat every few seconds and a node report whenever its nodes
change: about 2.5 MB of log a day per executor that no job owns, so pruning jobs never
takes it away. Before retention's cut-off only what the views need is kept, per executor:
its first node report since it was last deleted (the views' ``first_seen``), its last
node report (its nodes and pool) and its last heartbeat (``last_seen``, with the report).
Replaying what is kept gives the same views as replaying everything
(:mod:`.rebuild`); cordons, executor settings and deletions are never compacted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

import msgspec
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, schema
from armada.eventstore.retention import permit_pruning
from armada.model import events as ev

HEARTBEAT = ev.ExecutorHeartbeat.__struct_config__.tag
REPORT = ev.ExecutorReported.__struct_config__.tag
DELETED = ev.ExecutorDeleted.__struct_config__.tag
_KINDS = (HEARTBEAT, REPORT, DELETED)


class FleetEvent(NamedTuple):
    seq: int
    kind: str
    executor_id: str


#: Bytes of a payload read to find its executor: encoded events start with their type and,
#: for these, the executor's id (at most 63 characters), so a node report listing thousands
#: of nodes is never read whole only to be thrown away.
PREFIX = 256
_EXECUTOR_ID = re.compile(rb'^\{"type":"[A-Za-z]+","executorId":"([^"\\]*)"')


async def older_fleet_events(
    conn: AsyncConnection, cutoff: datetime, limit: int, after: int = 0
) -> list[FleetEvent]:
    """The oldest ``limit`` heartbeats, node reports and deletions created before ``cutoff``
    with a sequence number above ``after``.

    Read by the job index (they belong to no job: their job id is empty), oldest first; one
    whose id has escapes is read whole."""
    events = schema.events
    query = (
        select(events.c.seq, events.c.type, func.substr(events.c.payload, 1, PREFIX))
        .where(
            (events.c.job_id == "")
            & (events.c.seq > after)
            & events.c.type.in_(_KINDS)
            & (events.c.created < cutoff)
        )
        .order_by(events.c.seq)
        .limit(limit)
    )
    rows = (await conn.execute(query)).all()
    found = {seq: _EXECUTOR_ID.match(bytes(prefix)) for seq, _, prefix in rows}
    unusual = [seq for seq, match in found.items() if match is None]  # an id with escapes
    whole = await _executors(conn, unusual) if unusual else {}
    return [
        FleetEvent(seq, kind, match[1].decode() if (match := found[seq]) else whole[seq])
        for seq, kind, _ in rows
    ]


class _Executor(msgspec.Struct, rename="camel"):
    executor_id: str


async def _executors(conn: AsyncConnection, seqs: list[int]) -> dict[int, str]:
    decode = msgspec.json.Decoder(_Executor).decode
    query = select(schema.events.c.seq, schema.events.c.payload).where(schema.events.c.seq.in_(seqs))
    return {seq: decode(bytes(payload)).executor_id for seq, payload in await conn.execute(query)}


def superseded(history: Sequence[FleetEvent]) -> list[int]:
    """Sequence numbers in ``history`` (oldest first) that replaying it does not need.

    Per executor: what came before its last deletion is undone by that deletion; after
    it, a report replaces every earlier one's nodes and the last report or heartbeat sets
    ``last_seen``, so only the first report (``first_seen``), the last report and the
    last heartbeat stay. Deletions themselves stay."""
    by_executor: dict[str, list[FleetEvent]] = {}
    for event in history:
        by_executor.setdefault(event.executor_id, []).append(event)
    doomed: list[int] = []
    for events in by_executor.values():
        deletions = [i for i, event in enumerate(events) if event.kind == DELETED]
        start = deletions[-1] + 1 if deletions else 0
        doomed += [event.seq for event in events[:start] if event.kind != DELETED]
        rest = events[start:]
        reports = [event.seq for event in rest if event.kind == REPORT]
        heartbeats = [event.seq for event in rest if event.kind == HEARTBEAT]
        keep = set(reports[:1] + reports[-1:] + heartbeats[-1:])
        doomed += [event.seq for event in rest if event.seq not in keep]
    return sorted(doomed)


async def delete_events(conn: AsyncConnection, seqs: Sequence[int]) -> int:
    """Remove ``seqs`` from the log inside the caller's transaction, never the log's head
    (its sequence number is never given out again); return how many went."""
    head = await dialects.log_head(conn)
    doomed = [seq for seq in seqs if seq != head]
    if doomed:
        async with permit_pruning(conn):
            await conn.execute(delete(schema.events).where(schema.events.c.seq.in_(doomed)))
    return len(doomed)
