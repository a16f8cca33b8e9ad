"""Retention on SQLite and PostgreSQL: expired jobs leave the log and every view, nothing else does."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sqlalchemy import select

from armada.eventstore import fleet_history, retention, schema
from armada.eventstore.database import Database
from armada.eventstore.rebuild import rebuild_views
from armada.eventstore.views import utc
from armada.model import events as ev
from armada.services import archive
from armada.services.invariants import check
from armada.services.retention import Pruner
from armada.services.settings import RetentionSettings
from armada.services.streams import job_set_pages, until_stopped
from tests.databases import view_rows
from tests.factories import RandomHistory, append_in_batches, finished, make_job, submission

#: Jobs' rows in the views; the other views (queues, fleet, retry policies) are never pruned.
JOB_VIEWS = {"jobs", "job_states", "runs"}


async def log_rows(db: Database) -> list[tuple[int, str]]:
    async with db.engine.connect() as conn:
        return [tuple(row) for row in await conn.execute(select(schema.events.c.seq, schema.events.c.job_id))]  # type: ignore[misc]


async def fleet_history_seqs(db: Database) -> set[int]:
    """What ``log_rows`` held of heartbeats and node reports (compacted by the same rounds)."""
    events = schema.events
    kinds = [fleet_history.HEARTBEAT, fleet_history.REPORT]
    async with db.engine.connect() as conn:
        return set(await conn.scalars(select(events.c.seq).where(events.c.type.in_(kinds))))


def pruner(db: Database, now: datetime, **settings: Any) -> Pruner:
    """A pruner whose clock reads ``now``, keeping finished jobs for an hour."""
    retention_settings = RetentionSettings(**{"expire_after": "1h", **settings})
    return Pruner(db.store, retention_settings, clock=now.timestamp)


@pytest.mark.parametrize("seed", [3, 11])
async def test_after_pruning_a_rebuild_gives_the_live_views_and_only_expired_jobs_went(
    database: Database, seed: int
) -> None:
    rng = random.Random(seed)
    history = RandomHistory(seed=seed)
    stream = list(history.events(2500))
    await append_in_batches(database.store, stream, rng)
    before = await view_rows(database)
    log_before = await log_rows(database)
    fleet_before = await fleet_history_seqs(database)
    # Two prunes at random cut-offs, in random batch sizes: the second takes jobs the first kept.
    first, last = stream[0].created, stream[-1].created
    cutoffs = sorted(first + (last - first) * rng.random() for _ in range(2))
    for cutoff in cutoffs:
        await pruner(database, cutoff + timedelta(hours=1), batch_size=rng.randint(1, 50)).prune_once()
    cutoff = cutoffs[-1]

    states = {row[0]: (row[2], utc(row[3])) for row in before["job_states"]}
    expired = {job for job, (state, moved) in states.items() if state in _TERMINAL and moved < cutoff}
    head_holder = max(log_before)[1]
    expired.discard(head_holder)  # the newest event is kept (its seq is the log's head)
    assert len(expired) > 50
    live = await view_rows(database)
    for name, rows in before.items():
        if name in JOB_VIEWS:
            key = 0 if name != "runs" else 1
            assert live[name] == [row for row in rows if row[key] not in expired], name
        elif name in ROLLUPS:  # pruning moves figures to the "pruned" part, never loses any
            assert rollup_totals(name, live[name]) == rollup_totals(name, rows), name
            assert {row[0] for row in live[name]} == {"log", "pruned"}, name
        else:
            assert live[name] == rows, name  # configuration history is never pruned
    kept = {seq for seq, _ in await log_rows(database)}
    compacted = {seq for seq, job in log_before if seq not in kept and job not in expired}
    assert compacted <= fleet_before  # only old heartbeats and node reports went besides the jobs
    assert await log_rows(database) == [
        row for row in log_before if row[1] not in expired and row[0] not in compacted
    ]

    assert (await check(database.store)).ok
    await rebuild_views(database.store)
    assert await view_rows(database) == live


_TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"}
ROLLUPS = {table.name for table in schema.ROLLUPS}


def rollup_totals(name: str, rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], tuple[int, ...]]:
    """A usage rollup's figures per key, its two parts (log, pruned) added up."""
    keys = len(schema.metadata.tables[name].primary_key.columns)
    totals: dict[tuple[Any, ...], tuple[int, ...]] = {}
    for row in rows:
        key, figures = row[1:keys], tuple(int(figure) for figure in row[keys:])
        former = totals.get(key, (0,) * len(figures))
        totals[key] = tuple(a + b for a, b in zip(former, figures, strict=True))
    return totals


async def test_retention_off_keeps_everything(database: Database) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    await database.store.append(finished("01J00000000000000000000001", old))
    await database.store.append(finished("01J00000000000000000000002", old))
    assert await pruner(database, old + timedelta(days=3650), expire_after="off").prune_once() == 0
    assert await pruner(database, old + timedelta(days=3650), expire_after="0").prune_once() == 0
    assert len(await log_rows(database)) == 6


async def test_the_job_holding_the_newest_event_waits_so_no_message_id_is_given_twice(
    database: Database,
) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    await database.store.append(finished("01J00000000000000000000001", old))
    await database.store.append(finished("01J00000000000000000000002", old))
    now = old + timedelta(days=1)
    assert await pruner(database, now).prune_once() == 1
    assert await database.store.head() == 6
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    assert await database.store.head() == 7
    assert await pruner(database, now).prune_once() == 1
    assert await log_rows(database) == [(7, "")]


async def test_a_stream_resumed_from_a_pruned_message_id_continues_with_the_next_event(
    database: Database,
) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    gone, kept = make_job(), make_job()
    await database.store.append(finished(gone.id, old))  # seqs 1-3, all pruned
    await database.store.append(submission(kept))  # seqs 4-5, kept (queued)
    assert await pruner(database, old + timedelta(days=1)).prune_once() == 1
    pages = until_stopped(job_set_pages(database.store, "queue-a", "set-1", after=2))
    streamed = [stored async for page in pages for stored in page]
    assert [(stored.seq, stored.event.job_id) for stored in streamed] == [(4, kept.id), (5, kept.id)]
    # A job set wholly pruned ends at once, without error.
    wholly = [page async for page in until_stopped(job_set_pages(database.store, "queue-b", "set-1"))]
    assert wholly == []


async def test_pruned_batches_are_archived_in_full_before_they_are_deleted(
    database: Database, tmp_path: Path
) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    ids = [make_job().id for _ in range(5)]
    for job_id in ids:
        await database.store.append(finished(job_id, old))
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    async with database.engine.connect() as conn:
        expected = await retention.job_records(conn, ids)
    assert [len(job.events) for job in expected] == [3] * 5

    pruning = pruner(database, old + timedelta(days=1), batch_size=2, archive_dir=str(tmp_path / "archive"))
    assert await pruning.prune_once() == 5
    files = sorted((tmp_path / "archive").iterdir())
    assert {file.stat().st_mode & 0o777 for file in files} == {0o600}  # specs are private
    assert [file.name for file in files] == sorted(archive.file_name(ids[i : i + 2]) for i in range(0, 5, 2))
    archived = sorted((job for file in files for job in archive.read_batch(file)), key=lambda job: job.job_id)
    assert msgspec.json.encode(archived) == msgspec.json.encode(expected)
    assert archived[0].state == "CANCELLED"
    assert [e.event for e in archived[0].events][2]  # the payloads, verbatim
    decoded = ev.decode_event(bytes(archived[0].events[2].event))
    assert isinstance(decoded, ev.JobCancelled)


async def test_a_crash_between_archiving_and_deleting_archives_the_batch_again(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    ids = [make_job().id for _ in range(3)]
    for job_id in ids:
        await database.store.append(finished(job_id, old))
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    directory = tmp_path / "archive"
    pruning = pruner(database, old + timedelta(days=1), archive_dir=str(directory))

    async def crash(*_: object) -> None:
        raise RuntimeError("power cut")

    with monkeypatch.context() as patched:
        patched.setattr(retention, "delete_beside" if database.is_postgres else "delete_jobs", crash)
        with pytest.raises(RuntimeError):
            await pruning.prune_once()
    assert len(await log_rows(database)) == 10  # nothing deleted
    (written,) = directory.iterdir()
    first = written.read_bytes()
    assert await pruning.prune_once() == 3
    (again,) = directory.iterdir()
    assert again == written and again.read_bytes() == first
    assert [job.job_id for job in archive.read_batch(again)] == sorted(ids)
    assert await log_rows(database) == [(10, "")]


async def test_measures_the_oldest_finished_job_kept_and_the_database_size(database: Database) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    await database.store.append(finished(make_job().id, old))
    pruning = pruner(database, old)
    await pruning.measure()
    assert pruning.oldest_retained is not None and pruning.oldest_retained.timestamp() == old.timestamp()
    assert pruning.database_bytes > 0
    async with database.engine.connect() as conn:
        backlog = await retention.backlog(conn, old + timedelta(seconds=1))
    assert (backlog.jobs, backlog.events) == (1, 3)
    assert backlog.bytes > 100


async def test_sqlite_gives_the_pages_pruning_freed_back_to_the_file_system(database: Database) -> None:
    if database.is_postgres:
        pytest.skip("PostgreSQL's autovacuum makes freed space reusable; the files keep their size")
    async with database.engine.connect() as conn:
        assert (await conn.exec_driver_sql("PRAGMA auto_vacuum")).scalar() == 2  # incremental
    old = datetime(2020, 1, 1, tzinfo=UTC)
    for _ in range(20):
        await database.store.append([e for _ in range(50) for e in finished(make_job().id, old)])
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    pruning = pruner(database, old + timedelta(days=1), batch_size=200)
    await pruning.measure()
    full = pruning.database_bytes
    assert await pruning.prune_once() == 1000
    await pruning.measure()
    assert pruning.database_bytes < full / 2


async def test_appends_and_prunes_interleaved_still_rebuild_to_the_live_views(database: Database) -> None:
    rng = random.Random(5)
    stream = list(RandomHistory(seed=5).events(3000))
    position = 0
    while position < len(stream):
        size = rng.randint(100, 600)
        await append_in_batches(database.store, stream[position : position + size], rng)
        position += size
        now = stream[min(position, len(stream)) - 1].created
        await pruner(
            database, now + timedelta(minutes=rng.randint(50, 59)), batch_size=rng.randint(1, 30)
        ).prune_once()
    live = await view_rows(database)
    assert len(live["jobs"]) < len({event.job_id for event in stream if event.job_id})  # some were pruned
    assert (await check(database.store)).ok
    await rebuild_views(database.store)
    assert await view_rows(database) == live


async def wait_until(check: Callable[[], bool]) -> None:
    while not check():  # noqa: ASYNC110 - the pruner marks no round
        await asyncio.sleep(0.01)


async def test_only_the_leader_prunes_and_every_replica_measures(database: Database) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    await database.store.append(finished(make_job().id, old))
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    settings = RetentionSettings(expire_after="1h", interval="1h")
    follower = Pruner(database.store, settings, is_leader=lambda: False)
    follower.start()
    await asyncio.wait_for(wait_until(lambda: follower.database_bytes > 0), 30)
    await follower.stop()
    assert follower.pruned_jobs == 0 and len(await log_rows(database)) == 4
    assert follower.oldest_retained == old

    leader = Pruner(database.store, settings)
    leader.start()
    await asyncio.wait_for(wait_until(lambda: leader.database_bytes > 0), 30)
    await leader.stop()
    assert leader.pruned_jobs == 1 and leader.oldest_retained is None
    assert len(await log_rows(database)) == 1


async def test_admin_check_is_clean_while_pruning_runs(database: Database) -> None:
    stream = list(RandomHistory(seed=9).events(2000))
    await append_in_batches(database.store, stream, random.Random(9))
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    pruning = pruner(database, stream[-1].created + timedelta(hours=1), batch_size=3)
    running = asyncio.create_task(pruning.prune_once())
    reports = []
    while not running.done():
        before = pruning.pruned_jobs
        reports.append(await check(database.store))
        # Then let a batch through (back to back checks would starve SQLite's other writer).
        await wait_until(lambda before=before: pruning.pruned_jobs > before or running.done())
    assert await running > 50
    assert len(reports) > 10 and all(report.ok for report in reports), [r.violations for r in reports]


async def test_a_job_that_changed_after_its_batch_was_chosen_is_not_pruned_with_it(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = datetime(2020, 1, 1, tzinfo=UTC)
    ids = sorted(make_job().id for _ in range(3))
    for job_id in ids:
        await database.store.append(finished(job_id, old))
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    job = make_job(job_id=ids[1])  # as ``finished`` submitted it
    changed = ev.JobCancelling(queue=job.queue, job_set_id=job.job_set_id, job_id=job.id, created=old)
    choose = retention.choose
    appended: list[int] = []

    async def choose_then_append(*args: Any) -> retention.Chosen:
        chosen = await choose(*args)
        if not appended:  # once: an event for a job of the batch, after it was chosen
            appended.append(await database.store.append([changed]))
            await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
        return chosen

    monkeypatch.setattr(retention, "choose", choose_then_append)
    pruning = pruner(database, old + timedelta(days=1))
    batch = await pruning.prune_batch(old + timedelta(hours=1))
    # PostgreSQL refuses the whole batch (it is chosen again), SQLite leaves that job out.
    assert batch == ((3, 0, True) if database.is_postgres else (3, 2, False))
    kept = {job_id for _seq, job_id in await log_rows(database)}
    assert ids[1] in kept and (await check(database.store)).ok
    async with database.engine.connect() as conn:
        (record,) = await retention.job_records(conn, [ids[1]])
    assert [stored.seq for stored in record.events][-1] == appended[0]  # its events, the new one too

    assert await pruning.prune_once() == (3 if database.is_postgres else 1)
    assert {job_id for _seq, job_id in await log_rows(database)} == {""}
    assert (await check(database.store)).ok


async def test_on_postgres_a_batch_waits_for_the_append_lock_then_gives_way(database: Database) -> None:
    if not database.is_postgres:
        pytest.skip("SQLite's batches are deleted in an append group")
    old = datetime(2020, 1, 1, tzinfo=UTC)
    for _ in range(2):
        await database.store.append(finished(make_job().id, old))
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    pruning = pruner(database, old + timedelta(days=1))
    async with database.store.transaction() as tx:  # a writer holds the append lock meanwhile
        batch = await pruning.prune_batch(old + timedelta(hours=1))
        tx.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])
    assert batch == (2, 0, True) and len(await log_rows(database)) == 8
    assert await pruning.prune_batch(old + timedelta(hours=1)) == (2, 2, False)
    assert len(await log_rows(database)) == 2 and pruning.locked_seconds > 0
