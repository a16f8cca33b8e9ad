"""A job set's events a page at a time, with the next page read ahead (what the gRPC event
stream sends from), on SQLite and PostgreSQL: nothing lost, repeated or reordered across
page boundaries, and a reader that stops early leaves nothing running."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event

from armada.eventstore import dialects
from armada.eventstore.database import Database
from armada.services import streams
from tests.factories import make_job, submission


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "PAGE", 3)


async def _fill(database: Database, jobs: int) -> list[int]:
    """``jobs`` jobs in set-1 interleaved with as many in set-2; set-1's sequence numbers."""
    for _ in range(jobs):
        await database.store.append(submission(make_job(job_set_id="set-1")))
        await database.store.append(submission(make_job(job_set_id="set-2")))
    return [s.seq for s in await database.store.read(0, queue="queue-a", job_set_id="set-1", limit=10_000)]


async def test_pages_cover_the_job_set_in_order(database: Database) -> None:
    expected = await _fill(database, 7)  # 14 events: pages of 3, 3, 3, 3, 2
    pages = [page async for page in streams.job_set_pages(database.store, "queue-a", "set-1")]
    assert [len(page) for page in pages] == [3, 3, 3, 3, 2]
    assert [s.seq for page in pages for s in page] == expected
    pages_after = streams.job_set_pages(database.store, "queue-a", "set-1", after=expected[5])
    resumed = [s.seq async for page in streams.until_stopped(pages_after) for s in page]
    assert resumed == expected[6:]


async def test_a_watching_reader_gets_new_events_and_can_stop_at_any_page(database: Database) -> None:
    expected = await _fill(database, 3)
    pages = streams.job_set_pages(database.store, "queue-a", "set-1", watch=True)
    first = await anext(pages)
    assert [s.seq for s in first] == expected[:3]
    assert [s.seq for s in await anext(pages)] == expected[3:]
    waiting = asyncio.ensure_future(anext(pages))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    new = await database.store.append(submission(make_job(job_set_id="set-1")))
    assert [s.seq for s in await asyncio.wait_for(waiting, 10)] == [new - 1, new]
    await pages.aclose()

    early = streams.job_set_pages(database.store, "queue-a", "set-1")
    await anext(early)  # the second page is being read ahead
    await early.aclose()
    reads = [t for t in asyncio.all_tasks() if getattr(t.get_coro(), "__name__", "") == "_page"]
    assert reads and all(t.cancelling() for t in reads)  # dropped, not left to run
    await asyncio.sleep(0.1)
    assert all(t.cancelled() for t in reads)


async def test_an_idle_watcher_asks_the_log_only_without_a_listener(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch whose wait times out with no commit seen: PostgreSQL's listener would have heard
    any, so it queries nothing (a thousand idle streams timing out together took the pool);
    without a listener (SQLite) another process may have appended unheard, so it asks the log."""
    monkeypatch.setattr(streams, "IDLE_WAIT", 0.02)
    expected = await _fill(database, 1)
    postgres = dialects.is_postgres(database.engine)
    if postgres:
        assert database._listener is not None
        await asyncio.wait_for(database._listener.connected.wait(), 10)
    statements: list[str] = []

    def executed(conn: object, cursor: object, statement: str, *rest: object) -> None:
        statements.append(statement)

    event.listen(database.engine.sync_engine, "before_cursor_execute", executed)
    pages = streams.job_set_pages(database.store, "queue-a", "set-1", watch=True)
    assert [s.seq for s in await anext(pages)] == expected
    waiting = asyncio.ensure_future(anext(pages))
    await asyncio.sleep(0.3)  # many idle timeouts
    assert (statements == []) == postgres
    new = await database.store.append(submission(make_job(job_set_id="set-1")))
    assert [s.seq for s in await asyncio.wait_for(waiting, 10)] == [new - 1, new]
    await pages.aclose()
    event.remove(database.engine.sync_engine, "before_cursor_execute", executed)
