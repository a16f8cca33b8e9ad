"""On SQLite the append group runs its small statements on the event loop's thread and its
possibly big ones (reads of job views, large flushes) on the connection's own thread; a
connection returned to the pool runs on its thread again; the write-ahead log is
checkpointed on a connection's thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text

from armada.eventstore import schema, sqlite_driver
from armada.eventstore.checkpoints import CHECKPOINT_EVENTS
from armada.eventstore.database import Database
from armada.eventstore.dialects import WRITE_OPTION, driver_connection
from armada.eventstore.group import ON_LOOP_EVENTS
from armada.eventstore.writelock import Lane
from armada.model.events import Event
from tests.databases import sqlite_url
from tests.factories import make_job, submission


class StatementThreads:
    """The thread each SQL statement ran on (made on the event loop's thread)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []
        self.loop = threading.get_ident()

    def on_connect(self, dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection._conn.set_trace_callback(self._trace)

    def _trace(self, statement: str) -> None:
        self.seen.append((" ".join(statement.split()), threading.get_ident()))

    def threads_of(self, prefix: str) -> set[int]:
        return {thread for statement, thread in self.seen if statement.startswith(prefix)}

    def on_loop(self, prefix: str) -> bool:
        """Statements starting with ``prefix`` ran, all on the loop's thread."""
        return self.threads_of(prefix) == {self.loop}

    def off_loop(self, prefix: str) -> bool:
        """Statements starting with ``prefix`` ran, none on the loop's thread."""
        return bool(self.threads_of(prefix)) and self.loop not in self.threads_of(prefix)

    def clear(self) -> None:
        self.seen.clear()


def submissions(count: int) -> list[Event]:
    return [event for _ in range(count) for event in submission(make_job(queue="q"))]


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[tuple[Database, StatementThreads]]:
    threads = StatementThreads()
    database = Database(sqlite_url(tmp_path))
    event.listen(database.engine.sync_engine, "connect", threads.on_connect)
    await database.open()
    try:
        yield database, threads
    finally:
        await database.close()


async def test_a_small_append_runs_on_the_loop_thread(traced: tuple[Database, StatementThreads]) -> None:
    database, threads = traced
    threads.clear()
    async with database.store.transaction(lane=Lane.PROMPT) as tx:
        await (await tx.views(jobs=False)).execute(select(schema.queues.c.spec))
        tx.append(submissions(1))
    small = ("SELECT coalesce(max(events.seq)", "SELECT queues.spec", "INSERT INTO events", "COMMIT")
    for statement in small:
        assert threads.on_loop(statement), statement
    # Waiting for SQLite's write lock, maybe held by another transaction of this process that
    # needs the loop to go on, must not block the loop.
    assert threads.off_loop("BEGIN IMMEDIATE")


async def test_reads_of_job_views_and_big_flushes_run_on_the_connection_thread(
    traced: tuple[Database, StatementThreads],
) -> None:
    database, threads = traced
    threads.clear()
    async with database.store.transaction() as tx:
        tx.append(submissions(ON_LOOP_EVENTS))  # two events each
    assert threads.off_loop("INSERT INTO events")

    async with database.store.transaction() as tx:
        await (await tx.views()).execute(select(schema.jobs.c.job_id))
    assert threads.off_loop("SELECT jobs.job_id")


async def test_a_connection_back_in_the_pool_runs_on_its_own_thread(
    traced: tuple[Database, StatementThreads],
) -> None:
    database, threads = traced
    async with database.engine.connect() as conn:
        sqlite_driver.run_on_loop(await driver_connection(conn), True)
        await conn.execute(text("SELECT 'on the loop'"))
    async with database.engine.connect() as conn:
        await conn.execute(text("SELECT 'after checkin'"))
    assert threads.on_loop("SELECT 'on the loop'")
    assert threads.off_loop("SELECT 'after checkin'")


async def test_an_append_waits_for_the_write_lock_without_stalling_the_loop(
    traced: tuple[Database, StatementThreads],
) -> None:
    """Another transaction of this process holds SQLite's write lock and needs the loop to
    finish: an append waiting for the lock on the loop's thread would wait for it forever."""
    database, _ = traced
    async with database.engine.connect() as conn:
        other = await conn.execution_options(**{WRITE_OPTION: True})
        async with other.begin():
            append = asyncio.create_task(database.store.append(submissions(1)))
            await asyncio.sleep(0.2)
            assert not append.done()
            await other.execute(text("SELECT 'the loop goes on'"))
        assert await asyncio.wait_for(append, 10) == 2


async def test_the_log_is_checkpointed_off_the_loop_thread(
    traced: tuple[Database, StatementThreads], tmp_path: Path
) -> None:
    """A COMMIT on the loop's thread never checkpoints (that writes and syncs megabytes):
    the store checkpoints on a connection's thread every ``CHECKPOINT_EVENTS`` events."""
    database, threads = traced
    main_file = tmp_path / "armada.db"
    await database.store.append(submissions(100))
    size_before = main_file.stat().st_size
    assert not threads.threads_of("PRAGMA wal_checkpoint")

    await database.store.append(submissions(CHECKPOINT_EVENTS // 2))
    while database.store._committing:  # the checkpoint started by the commit
        await asyncio.wait(set(database.store._committing))
    assert threads.off_loop("PRAGMA wal_checkpoint(PASSIVE)")
    assert main_file.stat().st_size > size_before  # the log's pages were copied in
