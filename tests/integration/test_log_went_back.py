"""The log going back in time (the database restored under a running server, or a failover
to a standby that missed commits), on SQLite and PostgreSQL: the scheduler's log follower
reloads its state from the restored views and follows the log on from there; a job-set
stream opened past the restored head goes on from the head, so that the events appended
after the restore reach it; a watching stream that had delivered events past it ends with
a clear error (their message ids are being reused), one behind it goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from sqlalchemy import delete

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.rebuild import replay_into
from armada.model.errors import HistoryRewound
from armada.scheduler.follower import EventLogFollower
from armada.scheduling import SchedulingConfig
from armada.services import streams
from tests.factories import make_job, submission

SQLITE_GUARD = (
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
    "BEGIN SELECT RAISE(ABORT, 'the events table is append-only (DELETE rejected)'); END"
)


async def restore_to(database: Database, head: int) -> None:
    """What a restore of a backup taken at ``head`` leaves: the log up to it, views to match
    (the log's append-only guard is lifted for the transaction, as a restore replaces it)."""
    async with database.store.transaction() as tx:
        conn = await tx.views()
        if database.is_postgres:
            await conn.exec_driver_sql("SET LOCAL session_replication_role = replica")
        else:
            await conn.exec_driver_sql("DROP TRIGGER events_no_delete")
        await conn.execute(delete(schema.events).where(schema.events.c.seq > head))
        if not database.is_postgres:
            await conn.exec_driver_sql(SQLITE_GUARD)
        await replay_into(conn, database.store.unreadable)


async def eventually(check: Callable[[], bool], what: str) -> None:
    for _ in range(1200):  # up to a minute
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"waited a minute for {what}")


async def test_the_follower_reloads_when_the_log_goes_back(database: Database) -> None:
    kept, lost, later = make_job(), make_job(), make_job()
    backup_head = await database.store.append(submission(kept))
    await database.store.append(submission(lost))
    follower = EventLogFollower(database.store, SchedulingConfig())
    await follower.load()
    follower.start()
    try:
        assert follower.state.extras.keys() >= {kept.id, lost.id}
        await restore_to(database, backup_head)
        await eventually(lambda: follower.state.seq == backup_head, "the follower to reload")
        assert follower.applied.head == backup_head
        assert kept.id in follower.state.extras and lost.id not in follower.state.extras
        head = await database.store.append(submission(later))  # reuses the lost job's numbers
        await eventually(lambda: follower.state.seq == head, "the follower to follow on")
        assert later.id in follower.state.extras and lost.id not in follower.state.extras
    finally:
        await follower.stop()


async def test_a_stream_past_the_restored_head_goes_on_from_it(database: Database) -> None:
    kept, lost, later = make_job(), make_job(), make_job()
    backup_head = await database.store.append(submission(kept))
    seen = await database.store.append(submission(lost))
    await restore_to(database, backup_head)
    database.store.rewind(backup_head)  # as a server started on the restored database knows it
    pages = streams.job_set_pages(database.store, kept.queue, kept.job_set_id, after=seen, watch=True)
    waiting = asyncio.ensure_future(anext(pages))
    await asyncio.sleep(0.1)
    head = await database.store.append(submission(later))
    page = await asyncio.wait_for(waiting, 30)
    assert [(s.seq, s.event.job_id) for s in page] == [(head - 1, later.id), (head, later.id)]
    await pages.aclose()


async def test_a_watching_stream_past_the_restored_head_ends_telling_its_client_where_to_resume(
    database: Database,
) -> None:
    kept, lost, later = make_job(), make_job(), make_job()
    backup_head = await database.store.append(submission(kept))
    pages = streams.job_set_pages(database.store, kept.queue, kept.job_set_id, watch=True)
    assert [s.event.job_id for s in await anext(pages)] == [kept.id, kept.id]
    await database.store.append(submission(lost))
    delivered = await anext(pages)
    assert [s.event.job_id for s in delivered] == [lost.id, lost.id]
    waiting = asyncio.ensure_future(anext(pages))
    await restore_to(database, backup_head)
    database.store.rewind(backup_head)  # what the log follower does when it sees it
    # The ids it delivered are about to be reused: the stream says so and ends.
    with pytest.raises(HistoryRewound, match=f"went back in time to message id {backup_head}"):
        await asyncio.wait_for(waiting, 30)
    head = await database.store.append(submission(later))
    # Its last id now names one of the new events: the client resumes where it was told.
    assert delivered[-1].seq == head
    resumed = streams.job_set_pages(database.store, kept.queue, kept.job_set_id, after=backup_head)
    assert [(s.seq, s.event.job_id) for s in await anext(resumed)] == [(head - 1, later.id), (head, later.id)]
    await resumed.aclose()


async def test_a_watching_stream_behind_the_restored_head_goes_on(database: Database) -> None:
    kept, lost, later = make_job(), make_job(), make_job(job_set_id="another")
    backup_head = await database.store.append(submission(kept))
    pages = streams.job_set_pages(database.store, kept.queue, kept.job_set_id, watch=True)
    assert [s.event.job_id for s in await anext(pages)] == [kept.id, kept.id]
    await database.store.append(submission(later))  # another job set's: this stream delivered none
    waiting = asyncio.ensure_future(anext(pages))
    await asyncio.sleep(0.1)
    await restore_to(database, backup_head)
    database.store.rewind(backup_head)
    await database.store.append(submission(lost))
    page = await asyncio.wait_for(waiting, 30)
    assert [s.event.job_id for s in page] == [lost.id, lost.id]
    await pages.aclose()
