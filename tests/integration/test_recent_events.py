"""Reads served from the events this process just appended equal reads from the database."""

from __future__ import annotations

import asyncio
import random

import pytest

from armada.eventstore import job_views
from armada.eventstore.database import Database
from armada.eventstore.group import AppendGroup
from armada.eventstore.recent import RecentEvents, StoredEvent
from armada.eventstore.store import EventStore
from armada.model import events as ev
from tests.factories import RandomHistory, make_job, submission


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


async def test_the_notification_of_an_own_append_does_not_send_readers_to_the_database(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's NOTIFY reaches the listener before the appender's ``COMMIT`` returns; a
    reader it woke would find nothing held yet and read the events back from the database."""
    if not database.is_postgres:
        pytest.skip("only PostgreSQL notifies other connections of a commit")
    store = database.store
    await store.append(batch(1))
    await asyncio.wait_for(_listening(database), timeout=10)
    commit = AppendGroup.commit

    async def slow_commit(group: AppendGroup) -> None:
        await commit(group)
        await asyncio.sleep(0.3)  # the NOTIFY has reached the listener by now

    monkeypatch.setattr(AppendGroup, "commit", slow_commit)
    head = store.notifier.head

    async def reader() -> list[StoredEvent]:
        await store.wait_for_change(head, timeout=5)
        return await store.read(head)

    reading = asyncio.create_task(reader())
    appended = batch(2)
    await store.append(appended)
    assert [stored.event for stored in await reading] == appended
    assert all(stored.event is event for stored, event in zip(await reading, appended, strict=True))


async def _listening(database: Database) -> None:
    """Until the listener has connected (it publishes the log's head when it has)."""
    listener = database._listener
    assert listener is not None
    await listener.connected.wait()


async def test_job_set_reads_up_to_a_head_equal_database_reads(database: Database) -> None:
    """The streams' reads (one job set, up to the head they know) are served from memory,
    by job set, and equal the database's answer."""
    store = database.store
    sets = [("q1", "a"), ("q1", "b"), ("q2", "a")]
    appended = []
    for round_ in range(4):
        for queue, job_set in sets[: round_ + 1 if round_ < 3 else 3]:
            events = [e for _ in range(2) for e in submission(make_job(queue=queue, job_set_id=job_set))]
            await store.append(events)
            appended += events
    head = store.notifier.head
    from_database = EventStore(database.engine)
    for queue, job_set in [*sets, ("q3", "none")]:
        for after in range(0, head + 1, 3):
            for until in (after, after + 5, head):
                for limit in (1, 3, 1000):
                    expected = await from_database.read(
                        after, queue=queue, job_set_id=job_set, until_seq=until, limit=limit
                    )
                    got = await store.read(
                        after, queue=queue, job_set_id=job_set, until_seq=until, limit=limit
                    )
                    assert got == expected, (queue, job_set, after, until, limit)
    [first] = await store.read(0, queue="q1", job_set_id="a", until_seq=head, limit=1)
    assert first.event is appended[0]  # from memory: the object appended


def test_a_trimmed_job_set_index_sends_older_reads_to_the_database() -> None:
    recent = RecentEvents(capacity=3)
    events = [ev.JobQueued(queue="q", job_set_id=f"s{i % 2}", job_id=str(i)) for i in range(8)]
    for seq, event in enumerate(events, start=1):
        recent.add(seq, [event])  # trimmed to the newest 3 once 7 are held
    assert [s.seq for s in recent.of_job_set("q", "s0", 4, 8, 10)] == [5, 7]
    assert [s.seq for s in recent.of_job_set("q", "s1", 5, 8, 10)] == [6, 8]
    assert recent.of_job_set("q", "s0", 0, 8, 10) is None  # seqs 1-3 are no longer held
    assert recent.of_job_set("q", "s0", 6, 9, 10) is None  # seq 9 is not held yet


async def test_a_job_set_read_up_to_a_head_this_process_has_not_been_told_of_misses_nothing(
    database: Database,
) -> None:
    """A stream reads up to the database's head, which can be ahead of what this process was
    told (another replica appended; or its own commit is visible before the appender's
    ``COMMIT`` returns). Served from memory only up to the head it knew, the stream moved past
    the rest: a job set's ``submitted`` went missing this way."""
    store = EventStore(database.engine)  # not listening: as if PostgreSQL's NOTIFY lagged
    own = submission(make_job(queue="q", job_set_id="s"))
    await store.append(own)
    other_replica = EventStore(database.engine)
    elsewhere = submission(make_job(queue="q", job_set_id="s"))
    await other_replica.append(elsewhere)
    head = await store.head()
    assert store.notifier.head < head
    got = await store.read(0, queue="q", job_set_id="s", until_seq=head)
    assert [stored.event.job_id for stored in got] == [e.job_id for e in [*own, *elsewhere]]


def test_what_retention_deleted_is_forgotten_only_when_held() -> None:
    recent = RecentEvents()
    recent.add(10, [ev.JobQueued(queue="q", job_set_id="s", job_id=str(i)) for i in range(5)])
    assert not recent.holds_up_to(9)  # deleted events all older than those held: keep them
    assert recent.holds_up_to(10)
    assert not RecentEvents().holds_up_to(10**9)


async def test_job_states_from_memory_equal_the_views(database: Database) -> None:
    """Status calls are answered from this process's recent appends where they tell; after
    another replica's append, a pruning or a rewind, from the views: the same answer."""
    store, other_replica = database.store, EventStore(database.engine)
    rng = random.Random(44)
    stream = list(RandomHistory(seed=44).events(600))
    job_ids = [*sorted({event.job_id for event in stream if event.job_id}), "never-submitted"]
    position = served = 0
    while position < len(stream):
        size = rng.randint(1, 40)
        writer = other_replica if rng.random() < 0.15 else store
        await writer.append(stream[position : position + size])
        if writer is other_replica:
            store.notifier.heard(await store.head())  # its NOTIFY
        position += size
        async with database.engine.connect() as conn:
            expected = await job_views.job_state_values(conn, job_ids)
        assert await store.job_states(job_ids) == expected
        served += len(store._states.states(job_ids, store.notifier.head)[0])
    assert served  # some answers came from memory
    held = store._states.states(job_ids, store.notifier.head)[0]
    pruned = sorted(held)[:2]
    store.forget_recent(store.notifier.head, pruned)  # as retention does before deleting
    after = store._states.states(job_ids, store.notifier.head)[0]
    assert len(pruned) == 2 and after == {job_id: held[job_id] for job_id in held if job_id not in pruned}
