"""Usage accounting's write side: the daily rollups, kept as runs end and as jobs are pruned.

The ``log`` part of :data:`schema.usage` and :data:`schema.usage_waits` is a view: each
append adds what its events' runs used (:func:`count`), and a rebuild empties that part and
replays it. When retention removes a job, its figures move from the ``log`` part to the
``pruned`` part (:func:`settle`), which a rebuild keeps as it is. So the sum of both parts
never goes down, and a rebuild after pruning gives the figures before it.

A row exists only while its figure is not zero (figures only grow, and a move deletes the
rows it empties), so the live rows and a rebuild's are the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Any, cast

import msgspec
from sqlalchemy import Row, Table, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import UpdateBase

from armada.eventstore import dialects, schema
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.eventstore.usage_fold import Deltas, JobFacts, RunFacts, UsageFold, requests_of
from armada.eventstore.usage_memory import KnownFacts
from armada.eventstore.views import rows_in, utc
from armada.model import events as ev
from armada.model.jobs import ResourceRequirements
from armada.model.lifecycle import JobState

LOG, PRUNED = "log", "pruned"
_CELL = ("day", "queue", "owner", "pool", "priority_class")
_COUNTED: tuple[type[ev.Event], ...] = (
    ev.JobSubmitted,
    ev.JobQueued,
    ev.JobLeased,
    ev.JobRunning,
    *ev.RUN_ENDS,
)


def counted(events: Iterable[ev.Event]) -> list[ev.Event]:
    """The events usage accounting folds (kept by a batch until it is written)."""
    return [event for event in events if _role(event) is not _Role.OTHER]


class _Role(Enum):
    """What :func:`_start` needs to know of an event: which jobs and runs it introduces or ends."""

    SUBMITTED = 1
    LEASED = 2
    ENDED = 3
    COUNTED = 4
    OTHER = 5


#: Each event type's role (filled on first sight of a type: a dict lookup costs a fraction
#: of the ``isinstance`` chain per event, under the append lock).
_ROLES: dict[type[ev.Event], _Role] = {}


def _role(event: ev.Event) -> _Role:
    role = _ROLES.get(type(event))
    if role is None:
        if isinstance(event, ev.JobSubmitted):
            role = _Role.SUBMITTED
        elif isinstance(event, ev.JobLeased):
            role = _Role.LEASED
        elif isinstance(event, ev.RUN_ENDS):
            role = _Role.ENDED
        elif isinstance(event, _COUNTED):
            role = _Role.COUNTED
        else:
            role = _Role.OTHER
        _ROLES[type(event)] = role
    return role


async def count(conn: AsyncConnection, events: Sequence[ev.Event], known: KnownFacts | None = None) -> Deltas:
    """What ``events`` add to the rollups, read against the views as they are before the
    events are applied (call it before writing their view changes). ``known``: facts held
    from earlier batches, read instead of the views, and told what this one learnt."""
    if not events:
        return Deltas()
    fold = await _start(conn, events, known or KnownFacts({}, {}))
    for event in events:
        fold.add(event)
    if known is not None:
        known.record(fold, events)
    return fold.deltas


async def _start(conn: AsyncConnection, events: Sequence[ev.Event], known: KnownFacts) -> UsageFold:
    """A fold knowing the jobs and runs ``events`` name but do not introduce: for a run
    ending here, its run and job rows (one read); for a lease, its job's row. What
    ``known`` holds is not read."""
    submitted: set[str] = set()
    leased: dict[str, str] = {}  # run id -> job id
    ended: dict[str, str] = {}
    for event in events:
        role = _role(event)
        if role is _Role.SUBMITTED:
            submitted.add(event.job_id)
        elif role is _Role.LEASED:
            leased[event.run_id] = event.job_id
        elif role is _Role.ENDED and event.run_id:
            ended[event.run_id] = event.job_id
    fold = _from_known(events, known, submitted, leased)
    earlier = [run_id for run_id in ended.keys() - leased.keys() if run_id not in fold.runs]
    if earlier:
        for row in await rows_in(conn, _EARLIER_RUNS, schema.runs.c.run_id, earlier):
            fold.runs[row.run_id] = RunFacts(row.pool, utc(row.started))
            if row.job_id not in fold.jobs:
                fold.jobs[row.job_id] = _job_facts(row, _requests(row.spec))
    # Runs ended here need their job's requests; leases only its queueing.
    with_spec = set(ended.values()) - submitted - fold.jobs.keys()
    without = set(leased.values()) - submitted - with_spec - fold.jobs.keys()
    if with_spec:
        for row in await rows_in(conn, _JOBS_WITH_SPEC, schema.jobs.c.job_id, with_spec):
            fold.jobs[row.job_id] = _job_facts(row, _requests(row.spec))
    if without:
        for row in await rows_in(conn, _JOBS, schema.jobs.c.job_id, without):
            fold.jobs[row.job_id] = _job_facts(row, None)
    return fold


def _from_known(
    events: Sequence[ev.Event], known: KnownFacts, submitted: set[str], leased: dict[str, str]
) -> UsageFold:
    """A fold holding what ``known`` has of every job and run ``events`` name (but do not
    introduce): each event then updates what it would have read from the views."""
    fold = UsageFold()
    jobs, runs = fold.jobs, fold.runs
    for event in events:
        job_id, run_id = event.job_id, event.run_id
        if job_id not in jobs and job_id not in submitted and (facts := known.job(job_id)) is not None:
            jobs[job_id] = facts
        if run_id and run_id not in runs and run_id not in leased and (run := known.run(run_id)) is not None:
            runs[run_id] = run
    return fold


_JOB_COLUMNS = (
    schema.jobs.c.job_id,
    schema.jobs.c.queue,
    schema.jobs.c.owner,
    schema.jobs.c.priority_class,
    schema.jobs.c.state,
    schema.jobs.c.last_transition,
)
#: The reads of :func:`_start`, built once (building them costs more than a small batch's fold).
_EARLIER_RUNS = select(
    schema.runs.c.run_id, schema.runs.c.pool, schema.runs.c.started, *_JOB_COLUMNS, schema.jobs.c.spec
).join_from(schema.runs, schema.jobs, schema.runs.c.job_id == schema.jobs.c.job_id)
_JOBS_WITH_SPEC = select(*_JOB_COLUMNS, schema.jobs.c.spec)
_JOBS = select(*_JOB_COLUMNS)


class _Requests(msgspec.Struct, rename="camel"):
    """The part of a stored job spec usage needs (the rest is skipped, not decoded)."""

    scheduling_resource_requirements: ResourceRequirements = msgspec.field(
        default_factory=ResourceRequirements
    )


_decode_requests = msgspec.json.Decoder(_Requests).decode


def _requests(spec: bytes) -> dict[str, int]:
    """The requests of a stored spec (one that cannot be decoded counts nothing: the admin
    check reports it)."""
    try:
        return requests_of(_decode_requests(spec))
    except msgspec.DecodeError:
        return {}


def _job_facts(row: Any, requests: dict[str, int] | None) -> JobFacts:
    queued = utc(row.last_transition) if row.state == JobState.QUEUED.value else None
    return JobFacts(row.queue, row.owner, row.priority_class or "", requests, queued)


async def add(conn: AsyncConnection, deltas: Deltas, part: str = LOG, sign: int = 1) -> None:
    """Add ``deltas`` (times ``sign``) to ``part`` of the rollups."""
    for statement, rows in _additions(conn, deltas, part, sign):
        await conn.execute(statement, list(rows or ()))


def _additions(conn: AsyncConnection, deltas: Deltas, part: str, sign: int) -> list[dialects.Statement]:
    """The upserts adding ``deltas`` (times ``sign``) to ``part``, with their rows (none if empty)."""
    usage_rows = [
        {"part": part, **cell._asdict(), "outcome": outcome, "resource": resource, "amount": sign * amount}
        for (cell, outcome, resource), amount in sorted(deltas.usage.items())
    ]
    wait_rows = [
        {"part": part, **cell._asdict(), "bucket": bucket, "leases": sign * leases, "waited": sign * waited}
        for (cell, bucket), (leases, waited) in sorted(deltas.waits.items())
    ]
    return [
        (_upsert_add(conn, table, figures), rows)
        for table, figures, rows in (
            (schema.usage, ("amount",), usage_rows),
            (schema.usage_waits, ("leases", "waited"), wait_rows),
        )
        if rows
    ]


def _upsert_add(conn: AsyncConnection, table: Table, figures: tuple[str, ...]) -> UpdateBase:
    insert = postgresql.insert(table) if dialects.is_postgres(conn) else sqlite.insert(table)
    keys = [column.name for column in table.primary_key.columns]
    return insert.on_conflict_do_update(
        index_elements=keys, set_={name: table.c[name] + insert.excluded[name] for name in figures}
    )


def settle(conn: AsyncConnection, events: Iterable[ev.Event]) -> list[dialects.Statement]:
    """The statements moving the figures of jobs about to be pruned from the ``log`` part to
    the ``pruned`` part, for the pruning's transaction: ``events`` is each job's whole
    history, in log order, folded from nothing as a replay would."""
    fold = UsageFold()
    for event in events:
        fold.add(event)
    if not fold.deltas:
        return []
    usage, waits = schema.usage, schema.usage_waits
    return [
        *_additions(conn, fold.deltas, LOG, -1),
        *_additions(conn, fold.deltas, PRUNED, 1),
        (delete(usage).where((usage.c.part == LOG) & (usage.c.amount == 0)), None),
        (delete(waits).where((waits.c.part == LOG) & (waits.c.leases == 0)), None),
    ]


async def count_log(conn: AsyncConnection, *, batch: int = 5000) -> None:
    """Fill the ``log`` part from the whole log, under the append lock (when the rollups are
    created on a database that already has history: the log holds whole jobs, so folding
    it from nothing counts what a rebuild would)."""
    head = await dialects.lock_log(conn)
    events = schema.events
    fold, after = UsageFold(), 0
    while after < head:
        query = select(events.c.seq, events.c.payload).where(events.c.seq > after).order_by(events.c.seq)
        rows = (await conn.execute(query.limit(batch))).all()
        for _seq, event in await decode_log_rows(
            conn, cast("list[Row[int, bytes]]", rows), UnreadableRecords()
        ):
            fold.add(event)
        after = rows[-1][0]
    await add(conn, fold.deltas)


async def forget_log_part(conn: AsyncConnection) -> None:
    """Empty the ``log`` part (a rebuild replays it); the ``pruned`` part stays."""
    for table in schema.ROLLUPS:
        await conn.execute(delete(table).where(table.c.part == LOG))
