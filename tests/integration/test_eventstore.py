"""The event store on SQLite and PostgreSQL: append/read, append-only, atomicity, rebuild."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from typing import Any, NamedTuple

import psycopg
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.dialects import SMALL_INSERT_ROWS
from armada.eventstore.rebuild import rebuild_views
from armada.eventstore.store import EventStore
from armada.model import events as ev
from armada.model.lifecycle import JobState
from tests.databases import view_rows
from tests.factories import RandomHistory, make_job, submission


async def count(db: Database, table: Any) -> int:
    async with db.engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)) or 0)


async def test_append_assigns_dense_sequence_and_reads_back_in_order(database: Database) -> None:
    jobs = [make_job(job_set_id=f"set-{i % 2}") for i in range(5)]
    last = await database.store.append([e for job in jobs for e in submission(job)])
    assert last == 10
    everything = await database.store.read(0)
    assert [s.seq for s in everything] == list(range(1, 11))
    assert [s.event.type for s in everything[:2]] == ["submitted", "queued"]
    assert isinstance(everything[0].event, ev.JobSubmitted)
    assert everything[0].event.job == jobs[0]

    after = await database.store.read(4)
    assert [s.seq for s in after] == list(range(5, 11))
    one_set = await database.store.read(0, queue="queue-a", job_set_id="set-1")
    assert {s.event.job_set_id for s in one_set} == {"set-1"}
    assert len(one_set) == 4
    assert [s.seq for s in await database.store.read(0, limit=3)] == [1, 2, 3]
    assert [s.seq for s in await database.store.read(2, until_seq=5)] == [3, 4, 5]
    assert await database.store.head() == 10


async def test_projections_track_a_job_through_its_lifecycle(database: Database) -> None:
    job = make_job(cpu="500m", memory="2Gi")
    await database.store.append(submission(job))
    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id, "run_id": "run-1"}
    await database.store.append([ev.JobLeased(**env, cluster_id="c1", node_id="n1", pool="gpu")])
    await database.store.append(
        [ev.JobRunning(**env, node_name="n1"), ev.JobFailed(**env, exit_code=7, reason="x")]
    )
    async with database.engine.connect() as conn:
        row = (await conn.execute(select(schema.jobs).where(schema.jobs.c.job_id == job.id))).one()
        run = (await conn.execute(select(schema.runs))).one()
    assert row.state == JobState.FAILED
    assert (row.cpu_millis, row.memory_bytes, row.latest_run_id, row.exit_code) == (
        500,
        2 * 2**30,
        "run-1",
        7,
    )
    assert (run.state, run.pool, run.exit_code) == ("FAILED", "gpu", 7)
    assert run.started is not None and run.finished is not None


async def test_one_batch_updates_many_rows_whatever_python_types_their_values_have(
    database: Database,
) -> None:
    jobs = [make_job() for _ in range(3)]
    await database.store.append([e for job in jobs for e in submission(job)])
    envelopes = [{"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id} for job in jobs]
    # One grouped update whose values mix int and float (a binary array takes one type).
    await database.store.append(
        [
            ev.JobReprioritized(**env, new_priority=priority)
            for env, priority in zip(envelopes, [3, 2.5, 0], strict=True)
        ]
    )
    async with database.engine.connect() as conn:
        priorities = dict((await conn.execute(select(schema.jobs.c.job_id, schema.jobs.c.priority))).all())
    assert [priorities[job.id] for job in jobs] == [3.0, 2.5, 0.0]


class Draft(NamedTuple):
    events: list[ev.Event]
    job_ids: list[str]


@pytest.mark.parametrize("writer", ["this process", "another replica"])
async def test_an_optimistic_append_is_rebuilt_when_a_job_it_read_changed_meanwhile(
    database: Database, writer: str
) -> None:
    """The re-check is answered from memory for this process's appends, else from the log."""
    store = database.store
    watched, unrelated = make_job(), make_job()
    await store.append([e for job in (watched, unrelated) for e in submission(job)])
    other = store if writer == "this process" else EventStore(database.engine)
    seen: list[bool] = []

    async def build(conn: Any) -> Draft:
        jobs = schema.jobs
        requested = await conn.scalar(select(jobs.c.cancel_requested).where(jobs.c.job_id == watched.id))
        seen.append(bool(requested))
        if len(seen) == 1:  # between this read and the lock, unrelated and then watched change
            for job in (unrelated, watched):
                envelope = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}
                await other.append([ev.JobCancelling(**envelope, reason="stop")])
        envelope = {"queue": watched.queue, "job_set_id": watched.job_set_id, "job_id": watched.id}
        return Draft([ev.JobReprioritized(**envelope, new_priority=float(len(seen)))], [watched.id])

    draft = await store.append_optimistically(build)
    assert seen == [False, True], "the second build must see the cancellation"
    assert draft.events[0].new_priority == 2.0  # type: ignore[attr-defined]
    last = (await store.read(0))[-1].event
    assert isinstance(last, ev.JobReprioritized) and last.new_priority == 2.0


async def test_an_optimistic_append_is_not_rebuilt_when_only_other_jobs_changed(database: Database) -> None:
    store = database.store
    watched, unrelated = make_job(), make_job()
    await store.append([e for job in (watched, unrelated) for e in submission(job)])
    builds = 0

    async def build(conn: Any) -> Draft:
        nonlocal builds
        builds += 1
        envelope = {"queue": unrelated.queue, "job_set_id": unrelated.job_set_id, "job_id": unrelated.id}
        await store.append([ev.JobCancelling(**envelope, reason="stop")])
        envelope = {"queue": watched.queue, "job_set_id": watched.job_set_id, "job_id": watched.id}
        return Draft([ev.JobReprioritized(**envelope, new_priority=5.0)], [watched.id])

    await store.append_optimistically(build)
    assert builds == 1
    assert (await store.read(0))[-1].event.type == "reprioritized"


@pytest.mark.parametrize("statement", ["UPDATE events SET type = 'x'", "DELETE FROM events"])
async def test_events_table_is_append_only(database: Database, statement: str) -> None:
    await database.store.append(submission(make_job()))
    with pytest.raises(DBAPIError, match="append-only"):
        async with database.engine.begin() as conn:
            await conn.execute(text(statement))
    assert await count(database, schema.events) == 2


async def test_append_is_all_or_nothing(database: Database) -> None:
    job = make_job()
    await database.store.append(submission(job))
    before = await view_rows(database)
    # The second submission of the same job id violates the jobs view's key: the whole
    # batch, including the valid first job and its events, must vanish.
    batch = [*submission(make_job()), *submission(job)]
    with pytest.raises((IntegrityError, psycopg.IntegrityError, sqlite3.IntegrityError)):  # bulk: drivers
        await database.store.append(batch)
    assert await database.store.head() == 2
    assert await view_rows(database) == before


async def test_failed_transaction_appends_nothing(database: Database) -> None:
    with pytest.raises(RuntimeError):
        async with database.store.transaction() as tx:
            tx.append(submission(make_job()))
            raise RuntimeError("validation failed after staging")
    assert await database.store.head() == 0
    assert await count(database, schema.jobs) == 0


@pytest.mark.parametrize("largest", [SMALL_INSERT_ROWS, 60])  # small writes INSERT, larger ones COPY
async def test_rebuilt_views_equal_live_views(database: Database, largest: int) -> None:
    history = RandomHistory(seed=7)
    stream = list(history.events(3000))
    rng = random.Random(1)
    position = 0
    while position < len(stream):  # live appends in random batch sizes
        size = rng.randint(1, largest)
        await database.store.append(stream[position : position + size])
        position += size
    live = await view_rows(database)
    assert sum(len(rows) for rows in live.values()) > 100
    assert {row[8] for row in live["jobs"]} >= {"QUEUED", "SUCCEEDED", "FAILED", "CANCELLED"}

    replayed = await rebuild_views(database.store, batch=997)
    assert replayed == len(stream)
    assert await view_rows(database) == live


async def test_concurrent_appends_never_interleave(database: Database) -> None:
    async def submit(n: int) -> None:
        for _ in range(n):
            await database.store.append(submission(make_job()))

    await asyncio.gather(*(submit(10) for _ in range(5)))
    seqs = [s.seq for s in await database.store.read(0, limit=1000)]
    assert seqs == list(range(1, 101))
    # Each submission's two events are adjacent: appends were serialised.
    events = await database.store.read(0, limit=1000)
    for first, second in zip(events[::2], events[1::2], strict=True):
        assert (first.event.type, second.event.type) == ("submitted", "queued")
        assert first.event.job_id == second.event.job_id


async def test_waiters_wake_when_events_commit(database: Database) -> None:
    waiter = asyncio.create_task(database.store.wait_for_change(0, timeout=10))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await database.store.append(submission(make_job()))
    assert await asyncio.wait_for(waiter, 5) == 2
    assert await database.store.wait_for_change(2, timeout=0.05) == 2  # times out, returns head


@pytest.mark.postgres
async def test_other_replicas_wake_through_listen_notify(database: Database) -> None:
    if not database.is_postgres:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL only")
    replica = await Database(database.url).open(migrate_schema=False)
    try:
        assert replica._listener is not None
        await asyncio.wait_for(replica._listener.connected.wait(), 10)
        waiter = asyncio.create_task(replica.store.wait_for_change(0, timeout=10))
        await database.store.append(submission(make_job()))
        assert await asyncio.wait_for(waiter, 5) == 2
    finally:
        await replica.close()


@pytest.mark.postgres
async def test_appends_find_the_view_rows_they_update_by_key_not_by_scanning(database: Database) -> None:
    """Inside a write transaction a keyed join over thousands of rows is an index lookup."""
    if not database.is_postgres:
        pytest.skip("planner settings are PostgreSQL's")
    jobs = [make_job() for _ in range(3000)]
    await database.store.append([e for job in jobs for e in submission(job)])
    keyed_update = text(
        "EXPLAIN UPDATE jobs AS t SET priority = v.priority"
        " FROM unnest(CAST(:ids AS text[]), CAST(:priorities AS float[])) AS v(_pk, priority)"
        " WHERE t.job_id = v._pk"
    )
    values = {"ids": [job.id for job in jobs[:1000]], "priorities": [1.0] * 1000}
    async with database.engine.connect() as conn:
        await conn.execute(text("ANALYZE jobs"))
        outside = "\n".join(await conn.scalars(keyed_update, values))
    async with database.store.transaction() as tx:
        inside = "\n".join(await (await tx.views()).scalars(keyed_update, values))
    assert "Seq Scan on jobs" in outside, "the premise: left alone, the planner scans the view"
    assert "Seq Scan on jobs" not in inside and "Index Scan" in inside, inside
