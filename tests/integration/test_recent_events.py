"""Reads served from the events this process just appended equal reads from the database."""

from __future__ import annotations

from armada.eventstore.database import Database
from armada.eventstore.store import EventStore
from armada.model import events as ev
from tests.factories import make_job, submission


def batch(count: int) -> list[ev.Event]:
    return [event for _ in range(count) for event in submission(make_job())]


async def test_in_process_reads_equal_database_reads(database: Database) -> None:
    store = database.store
    appended = [batch(size) for size in (1, 3, 5)]
    for events in appended:
        await store.append(events)
    # Served from memory: the very objects appended, no decoding.
    assert (await store.read(0, limit=1))[0].event is appended[0][0]
    from_database = EventStore(database.engine)  # same database, nothing held in memory
    for after in range(18):
        for limit in (1, 4, 100):
            expected = await from_database.read(after, limit=limit)
            assert await store.read(after, limit=limit) == expected
            assert await store.read(after, until_seq=10, limit=limit) == [
                stored for stored in expected if stored.seq <= 10
            ]


async def test_events_appended_elsewhere_are_read_from_the_database(database: Database) -> None:
    store = database.store
    await store.append(batch(2))
    other_replica = EventStore(database.engine)
    await other_replica.append(batch(1))  # seqs 5 and 6, unknown to ``store``'s memory
    await store.append(batch(1))  # seqs 7 and 8: a gap in what ``store`` holds
    seqs = [stored.seq for stored in await store.read(0)]
    assert seqs == list(range(1, 9))
    store.notifier.publish(10)  # told of events it does not hold: the database answers
    assert [stored.seq for stored in await store.read(6)] == [7, 8]
