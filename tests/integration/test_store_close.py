"""Closing the event store on SQLite and PostgreSQL while writes are under way: every writer
gets an answer (committed, or an error), what was acknowledged is in the log, and no
connection is left open (a commit cut short would leave one, and its writers unanswered).
"""

from __future__ import annotations

import asyncio

import pytest

from armada.eventstore.database import Database
from armada.eventstore.writelock import Lane
from armada.model.errors import Unavailable
from tests.factories import make_job, submission


async def logged_job_ids(database: Database) -> set[str]:
    return {stored.event.job_id for stored in await database.store.read(0, limit=100_000)}


def assert_nothing_checked_out(database: Database) -> None:
    assert database.engine.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_close_serves_the_queued_writers_refuses_new_ones_and_leaves_nothing_open(
    database: Database,
) -> None:
    store = database.store
    gate = asyncio.Event()
    holder_job = make_job()

    async def holder() -> str:
        async with store.transaction() as tx:
            tx.append(submission(holder_job))
            await gate.wait()
        return holder_job.id

    async def writer(lane: Lane = Lane.BULK) -> str:
        job = make_job()
        async with store.transaction(lane=lane) as tx:
            tx.append(submission(job))
        return job.id

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.05)
    queued = [asyncio.create_task(writer(Lane.URGENT if i == 3 else Lane.BULK)) for i in range(5)]
    lock = store._append_lock
    while lock.waiting(Lane.BULK) + lock.waiting(Lane.URGENT) < len(queued):  # noqa: ASYNC110 - no event marks queueing
        await asyncio.sleep(0.01)
    queued[1].cancel()  # a client that went away while queued
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # it waits for the holder and the writers queued before it
    with pytest.raises(Unavailable):
        await writer()
    with pytest.raises(Unavailable):
        await writer(Lane.URGENT)
    gate.set()
    await closing
    assert_nothing_checked_out(database)  # the engine may be disposed now

    results = await asyncio.gather(held, *queued, return_exceptions=True)
    assert isinstance(results[2], asyncio.CancelledError)
    committed = {result for result in results if isinstance(result, str)}
    assert len(committed) == 5  # the holder and four of the five queued writers
    assert await logged_job_ids(database) == committed


async def test_close_while_groups_commit_loses_no_acknowledged_write(database: Database) -> None:
    """Writers append in a loop until they are refused; the store is closed while a group is
    committing. Exactly the acknowledged writes are in the log, and every connection is back."""
    store = database.store
    acknowledged: set[str] = set()

    async def append_until_refused() -> None:
        while True:
            job = make_job()
            try:
                await store.append(submission(job))
            except Unavailable:
                return
            acknowledged.add(job.id)

    writers = [asyncio.create_task(append_until_refused()) for _ in range(6)]
    for _ in range(1_000_000):  # no event marks a commit under way
        if store._committing and len(acknowledged) >= 20:
            break
        await asyncio.sleep(0)
    else:
        pytest.fail(f"no group commit seen under way after {len(acknowledged)} writes")
    await store.close()
    assert_nothing_checked_out(database)  # the engine may be disposed now
    await asyncio.wait_for(asyncio.gather(*writers), timeout=30)  # each one was refused, none hangs
    assert await logged_job_ids(database) == acknowledged
