"""Events prepared before the write lock are stored exactly as if appended plainly."""

from __future__ import annotations

from sqlalchemy import select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.store import PreparedEvents
from tests.factories import make_job, submission


async def _states(database: Database) -> dict[str, str]:
    async with database.engine.connect() as conn:
        return {row.job_id: row.state for row in await conn.execute(select(schema.jobs))}


async def test_prepared_and_plain_appends_store_the_same(database: Database) -> None:
    first, second, third = make_job(), make_job(), make_job()
    prepared = PreparedEvents(submission(first))
    async with database.store.transaction() as tx:
        tx.append(prepared)
    async with database.store.transaction() as tx:
        tx.append(PreparedEvents(submission(second)))
        tx.append(submission(third))  # mixed: the whole transaction is prepared afresh
    stored = [(s.seq, s.event.type, s.event.job_id) for s in await database.store.read(0)]
    expected = [(kind, job.id) for job in (first, second, third) for kind in ("submitted", "queued")]
    assert stored == [(seq, *entry) for seq, entry in enumerate(expected, start=1)]
    assert await _states(database) == {first.id: "QUEUED", second.id: "QUEUED", third.id: "QUEUED"}
