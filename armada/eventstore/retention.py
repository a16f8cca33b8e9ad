"""Retention's reads and deletes: which finished jobs expired, what they hold, removing them.

A job is removed whole: its events from the log and its rows from every view keyed by it
(``jobs``, ``job_states``, ``runs``), so replaying what the log still holds gives the views
that remain (:mod:`.rebuild`). Nothing else is keyed by a job: queues, retry policies and
the fleet's rows are never touched, and the job's usage figures move to the rollups' ``pruned``
part (:mod:`.usage`), which outlives it. The policy (when, how many, the archive) belongs to
:mod:`armada.services.retention`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import msgspec
from psycopg import errors
from sqlalchemy import Integer, Row, Table, delete, func, insert, literal, select, text
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from armada.eventstore import dialects, schema, usage
from armada.eventstore.recent import StoredEvent
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.eventstore.views import rows_in, utc
from armada.model.lifecycle import TERMINAL_JOB_STATES

_TERMINAL = sorted(state.value for state in TERMINAL_JOB_STATES)
#: The tables holding rows of a job, children first (none has a foreign key; order is tidiness).
JOB_TABLES: tuple[Table, ...] = (schema.events, schema.runs, schema.job_states, schema.jobs)


def _expired(cutoff: datetime) -> Any:
    states = schema.job_states
    return (states.c.state.in_(_TERMINAL)) & (states.c.last_transition < cutoff)


async def expired_jobs(conn: AsyncConnection, cutoff: datetime, limit: int) -> list[str]:
    """Up to ``limit`` ids of finished jobs whose last transition is before ``cutoff``, sorted.

    Read from ``job_states`` by its (state, last transition) index; no order is asked for,
    so a backlog of millions is never sorted to take a batch of it. Later reads of the
    caller's transaction (:func:`choose`, :func:`job_records`) use the job indexes, whatever
    PostgreSQL's statistics say.
    """
    query = select(schema.job_states.c.job_id).where(_expired(cutoff)).limit(limit)
    found = sorted(await conn.scalars(query))
    await _planner(conn, "enable_seqscan", "off")  # what follows reads these jobs' rows by index
    return found


@dataclass(frozen=True)
class Chosen:
    """A batch chosen outside the append lock, with everything its deletion needs."""

    #: The log's head when it was chosen: a job with no event after it is unchanged since.
    seen: int
    #: How many expired jobs were found (fewer than asked: the backlog is done).
    found: int
    #: Each job's events (sequence numbers and decoded), in log order.
    events: dict[str, list[StoredEvent]]


async def choose(conn: AsyncConnection, cutoff: datetime, limit: int, records: UnreadableRecords) -> Chosen:
    """Up to ``limit`` expired jobs and all their events, read on a plain connection.

    The job holding the log's newest event is left out: the head's sequence number is never
    taken away, so it is never given out again (message ids stay unique). A job with no
    event after :attr:`Chosen.seen` still has exactly these events and is still expired,
    so the deletion (:func:`delete_jobs`) needs no read under the append lock."""
    seen = await dialects.log_head(conn)
    found = await expired_jobs(conn, cutoff, limit)
    holder = await conn.scalar(select(schema.events.c.job_id).where(schema.events.c.seq == seen))
    job_ids = [job_id for job_id in found if job_id != holder]
    log = schema.events
    query = select(log.c.seq, log.c.payload)
    rows = sorted(await rows_in(conn, query, log.c.job_id, job_ids), key=lambda row: int(row.seq))
    events: dict[str, list[StoredEvent]] = {job_id: [] for job_id in job_ids}
    for stored in await decode_log_rows(conn, cast("list[Row[int, bytes]]", rows), records):
        events[stored.event.job_id].append(stored)
    for table in JOB_TABLES[1:]:  # their pages in memory for the deletes (a backlog is cold on disk)
        await rows_in(conn, select(table), table.c.job_id, job_ids)
    return Chosen(seen, len(found), events)


def _deletes(conn: AsyncConnection, chosen: Chosen, ids: Sequence[str]) -> list[dialects.Statement]:
    """The statements removing ``ids`` from the log (their events up to :attr:`Chosen.seen`:
    one appended since is not the batch's) and from every view, the log's between the
    ``log_pruning`` permit's insert and its removal."""
    permit, log = schema.log_pruning, schema.events
    return [
        (insert(permit).values(pruning=True), None),
        *(
            (delete(log).where(where & (log.c.seq <= chosen.seen)), None)
            for where in dialects.in_values(conn, log.c.job_id, ids)
        ),
        (delete(permit), None),
        *(
            (delete(table).where(where), None)
            for table in JOB_TABLES[1:]
            for where in dialects.in_values(conn, table.c.job_id, ids)
        ),
    ]


def _settle(conn: AsyncConnection, chosen: Chosen, ids: Sequence[str]) -> list[dialects.Statement]:
    """The statements moving the usage figures of ``ids`` to the rollups' ``pruned`` part."""
    history = sorted((stored for job_id in ids for stored in chosen.events[job_id]), key=lambda one: one.seq)
    return usage.settle(conn, (stored.event for stored in history))


async def delete_jobs(conn: AsyncConnection, chosen: Chosen, job_ids: Collection[str]) -> None:
    """Remove ``job_ids`` (of ``chosen``, unchanged since) from the log and every view, inside
    the caller's transaction (SQLite: an append group's, at its commit), their usage figures
    moved to the rollups' ``pruned`` part."""
    ids = sorted(job_ids)
    for statement, rows in [*_settle(conn, chosen, ids), *_deletes(conn, chosen, ids)] if ids else []:
        await conn.execute(statement, list(rows) if rows else None)


#: How long a batch deleted beside the appends (:func:`delete_beside`) waits for the append
#: lock (or a row) before it gives up and is tried again: well below PostgreSQL's
#: ``deadlock_timeout`` (1 s by default), so that when a writer holding the lock waits for a
#: row the batch deleted (``armada admin rebuild-views`` emptying the views), the batch is
#: what gives way.
LOCK_WAIT = "500ms"
#: The views' rows by the job indexes whatever the statistics say (a table not yet analysed
#: was read whole: 67 ms for 100,000 events).
_BY_INDEX = text("SET LOCAL enable_seqscan TO off")
_TAKE_LOCK = text(
    "SELECT pg_advisory_xact_lock_shared(:key), set_config('armada.locked', clock_timestamp()::text, true)"
).bindparams(key=dialects.APPEND_LOCK_KEY)
_HELD = text("SELECT extract(epoch FROM clock_timestamp() - current_setting('armada.locked')::timestamptz)")


class Deferred(Exception):
    """A batch was not deleted: a job of it changed since it was chosen, or the append lock
    stayed busy longer than :data:`LOCK_WAIT`. A later batch chooses again."""


async def delete_beside(conn: AsyncConnection, chosen: Chosen, job_ids: Collection[str]) -> float:
    """PostgreSQL: remove ``job_ids`` (of ``chosen``) as :func:`delete_jobs` does, in a
    transaction of its own beside the appends; return the seconds from taking the append
    lock to the COMMIT, by the database server's clock (the COMMIT's own flush comes on top).

    The rows go first, without the lock: no writer touches a finished job's rows, so none
    waits for them. Then the transaction takes the append lock shared (it waits for the
    append in progress, and the next one waits for it), refuses itself if any of the jobs
    has an event left (appended after :attr:`Chosen.seen`, so not deleted), moves the usage
    figures (rows appends add to: only under the lock) and commits. All of it goes in one
    round trip, so the lock is held for the server's work on a few statements, never for a
    turnaround of this client's. Raises :class:`Deferred` when the batch must wait."""
    ids = sorted(job_ids)
    log = schema.events
    changed = literal("job ") + log.c.job_id + literal(" changed since it was chosen")
    (left,) = dialects.in_values(conn, log.c.job_id, ids)
    statements: list[dialects.Statement] = [
        (text(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'"), None),
        (_BY_INDEX, None),
        *_deletes(conn, chosen, ids),
        (_TAKE_LOCK, None),
        (select(sql_cast(changed, Integer)).where(left).limit(1), None),  # an error if one is left
        *_settle(conn, chosen, ids),
        (_HELD, None),
    ]
    try:
        (held,) = await dialects.commit_in_one_round_trip(conn, statements)
    except (errors.LockNotAvailable, errors.InvalidTextRepresentation) as exc:
        raise Deferred(str(exc)) from exc
    return float(held)


@asynccontextmanager
async def permit_pruning(conn: AsyncConnection) -> AsyncIterator[None]:
    """Let the caller's transaction delete from the log: only one holding a ``log_pruning``
    row may (migration 0010), so no other code path can take history away by mistake."""
    permit = schema.log_pruning
    await conn.execute(insert(permit).values(pruning=True))
    yield
    await conn.execute(delete(permit))


async def _planner(conn: AsyncConnection, name: str, value: str) -> str:
    """PostgreSQL: set a planner setting for the rest of the transaction; return its former value.
    (The transaction is an append group's: the setting is put back for the writers after.)"""
    if not dialects.is_postgres(conn):
        return value
    former = str(await conn.scalar(select(func.current_setting(name))))
    await conn.execute(select(func.set_config(name, value, True)))
    return former


#: Free pages handed back to the file system per write (SQLite: 4 KiB each): a write that
#: moves pages holds SQLite's write lock, so it is cut short and repeated.
RELEASE_PAGES = 1024
#: SQLite's ``auto_vacuum`` value for incremental.
INCREMENTAL = 2


async def release_space(engine: AsyncEngine) -> None:
    """SQLite: shrink the file by its free pages, if it was created with incremental
    auto-vacuum (armada's are; older files keep their free pages and reuse them, so their
    size still plateaus). PostgreSQL's autovacuum makes the space reusable.

    In writes of their own, after the pruning's: the pragma frees a page per step, and only
    a script is stepped to the end by Python's driver."""
    if dialects.is_postgres(engine):
        return
    async with engine.connect() as conn:
        driver = await dialects.driver_connection(conn)  # (no transaction: SQLAlchemy's would end)

        async def pragma(name: str) -> int:
            async with driver.execute(f"PRAGMA {name}") as cursor:
                return int((await cursor.fetchone())[0])

        if await pragma("auto_vacuum") != INCREMENTAL:
            return  # a file made before: its free pages stay in it, for reuse
        while await pragma("freelist_count"):
            await driver.executescript(f"PRAGMA incremental_vacuum({RELEASE_PAGES});")


class ArchivedEvent(msgspec.Struct, rename="camel"):
    seq: int
    event: msgspec.Raw


class ArchivedJob(msgspec.Struct, rename="camel"):
    """One pruned job as its archive line holds it: the view rows and every event."""

    job_id: str
    queue: str
    job_set_id: str
    state: str
    last_transition: datetime
    #: The ``jobs`` row, its ``spec`` decoded (the job as submitted, or as last mutated).
    job: dict[str, Any]
    runs: list[dict[str, Any]]
    events: list[ArchivedEvent]
    #: Per resource, the amount requested times the seconds its runs held a node.
    resource_seconds: dict[str, float]


async def job_records(conn: AsyncConnection, job_ids: Sequence[str]) -> list[ArchivedJob]:
    """Everything stored of ``job_ids``, for the archive, in job id order."""
    jobs, runs, events = schema.jobs, schema.runs, schema.events
    job_rows = {
        row.job_id: _aware(row._asdict())
        for row in await conn.execute(select(jobs).where(jobs.c.job_id.in_(job_ids)))
    }
    run_rows: dict[str, list[dict[str, Any]]] = {}
    query = select(runs).where(runs.c.job_id.in_(job_ids)).order_by(runs.c.leased)
    for run in await conn.execute(query):
        run_rows.setdefault(run.job_id, []).append(_aware(run._asdict()))
    event_rows: dict[str, list[ArchivedEvent]] = {}
    query = select(events.c.job_id, events.c.seq, events.c.payload).where(events.c.job_id.in_(job_ids))
    for job_id, seq, payload in await conn.execute(query.order_by(events.c.seq)):
        event_rows.setdefault(job_id, []).append(ArchivedEvent(seq, msgspec.Raw(bytes(payload))))
    records = []
    for job_id in sorted(job_rows):
        row: dict[str, Any] = job_rows[job_id]
        row["spec"] = msgspec.Raw(bytes(row["spec"]))
        job_runs = run_rows.get(job_id, [])
        records.append(
            ArchivedJob(
                job_id=job_id,
                queue=row["queue"],
                job_set_id=row["job_set_id"],
                state=row["state"],
                last_transition=row["last_transition"],
                job=row,
                runs=job_runs,
                events=event_rows.get(job_id, []),
                resource_seconds=_resource_seconds(row, job_runs),
            )
        )
    return records


def _aware(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its times in UTC (SQLite hands them back naive)."""
    return {key: utc(value) if isinstance(value, datetime) else value for key, value in row.items()}


def _resource_seconds(job: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, float]:
    held = sum(
        (run["finished"] - run["started"]).total_seconds()
        for run in runs
        if run["started"] and run["finished"]
    )
    return {
        "cpu": job["cpu_millis"] / 1000 * held,
        "memory": float(job["memory_bytes"]) * held,
        "nvidia.com/gpu": float(job["gpu"]) * held,
    }


class Backlog(msgspec.Struct, rename="camel"):
    """What a prune would remove now (``armada admin prune --dry-run``)."""

    jobs: int
    events: int
    #: Bytes of the expired jobs' events and specs as stored (indexes and row overhead not counted).
    bytes: int


async def backlog(conn: AsyncConnection, cutoff: datetime) -> Backlog:
    """Count the expired jobs, their events and their stored bytes."""
    states, jobs, events = schema.job_states, schema.jobs, schema.events
    expired = select(states.c.job_id).where(_expired(cutoff)).scalar_subquery()
    job_count, spec_bytes = (
        await conn.execute(
            select(func.count(), func.coalesce(func.sum(func.length(jobs.c.spec)), 0)).where(
                jobs.c.job_id.in_(expired)
            )
        )
    ).one()
    event_count, payload_bytes = (
        await conn.execute(
            select(func.count(), func.coalesce(func.sum(func.length(events.c.payload)), 0)).where(
                events.c.job_id.in_(expired)
            )
        )
    ).one()
    return Backlog(jobs=int(job_count), events=int(event_count), bytes=int(spec_bytes) + int(payload_bytes))


async def oldest_retained(conn: AsyncConnection) -> datetime | None:
    """The earliest last transition of a finished job still kept (None: none kept)."""
    states = schema.job_states
    query = select(func.min(states.c.last_transition)).where(states.c.state.in_(_TERMINAL))
    return utc(await conn.scalar(query))


async def database_size(conn: AsyncConnection) -> int:
    """Bytes the database takes: PostgreSQL's whole database, SQLite's file (its log aside)."""
    if dialects.is_postgres(conn):
        return int(await conn.scalar(select(func.pg_database_size(func.current_database()))) or 0)
    pages = int((await conn.exec_driver_sql("PRAGMA page_count")).scalar() or 0)
    size = int((await conn.exec_driver_sql("PRAGMA page_size")).scalar() or 0)
    return pages * size
