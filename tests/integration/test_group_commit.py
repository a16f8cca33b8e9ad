"""Group commit on SQLite and PostgreSQL: writers queued at the append lock share one
transaction, yet each keeps its own checks and answer, sees what the writers before it in
the group staged, and gets dense, contiguous sequence numbers in log order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, schema
from armada.eventstore.database import Database
from armada.eventstore.group import AppendGroup
from armada.eventstore.rebuild import rebuild_views
from armada.eventstore.writelock import Lane
from armada.model.errors import ArmadaError, NotFound
from armada.model.events import QueueCreated
from armada.model.jobs import Job
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequest
from armada.services.pod_policy import QueueSecurityGate
from armada.services.queues import create_queue
from armada.services.submission import PROMPT_JOBS, submit_jobs
from armada.services.validation import SubmissionRules
from armada.settings import Settings
from tests.api.jobs import item
from tests.databases import view_rows
from tests.factories import RandomHistory, make_job, submission

RULES = SubmissionRules.from_settings(Settings())
GATE = QueueSecurityGate(may_administer=True, reserved_namespaces=frozenset())


def request(queue: str, count: int = 3, **fields: Any) -> JobSubmitRequest:
    return JobSubmitRequest(
        queue=queue, job_set_id="set", job_request_items=[item(**fields) for _ in range(count)]
    )


async def as_one_group(database: Database, writers: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """Run ``writers`` queued behind a held append lock, so that they form one group.

    Returns each writer's result or exception; asserts that they committed as one group.
    """
    store = database.store
    groups, served = store.appended_groups, store.appended_writers
    gate = asyncio.Event()

    async def holder() -> None:
        async with store.transaction() as tx:
            tx.append(submission(make_job(queue="holder")))
            await gate.wait()

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.05)
    tasks = [asyncio.create_task(writer()) for writer in writers]
    while sum(map(store._append_lock.waiting, Lane)) < len(writers):  # noqa: ASYNC110 - no event marks queueing
        await asyncio.sleep(0.01)
    gate.set()
    await held
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert store.appended_groups == groups + 1
    succeeded = sum(not isinstance(result, BaseException) for result in results)
    assert store.appended_writers == served + 1 + succeeded
    return results


async def jobs_of(database: Database, queue: str) -> int:
    async with database.engine.connect() as conn:
        query = select(func.count()).select_from(schema.jobs).where(schema.jobs.c.queue == queue)
        return int(await conn.scalar(query) or 0)


async def test_one_bad_request_fails_alone_and_its_neighbours_commit_together(database: Database) -> None:
    store = database.store
    for name in ("holder", "team-a", "team-b"):
        await create_queue(store, Queue(name=name), "admin", GATE)
    before = await store.head()

    results = await as_one_group(
        database,
        [
            lambda: submit_jobs(store, request("team-a"), RULES, "alice"),
            lambda: submit_jobs(store, request("no-such-queue"), RULES, "mallory"),
            lambda: submit_jobs(store, request("team-b", count=2), RULES, "bob"),
        ],
    )

    first, bad, second = results
    assert isinstance(bad, NotFound) and bad.field == "queue"
    assert len(first.job_response_items) == 3 and len(second.job_response_items) == 2
    assert await jobs_of(database, "team-a") == 3 and await jobs_of(database, "team-b") == 2
    assert await jobs_of(database, "no-such-queue") == 0
    stored = await store.read(before)
    assert [s.seq for s in stored] == list(range(before + 1, before + 2 + 10 + 1))  # holder 2, jobs 5 x 2
    # Log order is the order the writers were served in, each one's events contiguous.
    assert [s.event.queue for s in stored] == ["holder"] * 2 + ["team-a"] * 6 + ["team-b"] * 4
    submitted = [s.event.job_id for s in stored if s.event.type == "submitted" and s.event.queue != "holder"]
    answered = [i.job_id for i in first.job_response_items] + [i.job_id for i in second.job_response_items]
    assert submitted == answered


async def test_a_writer_sees_what_earlier_writers_of_its_group_staged(database: Database) -> None:
    store = database.store
    await create_queue(store, Queue(name="holder"), "admin", GATE)

    async def create_fresh() -> None:  # as ``create_queue`` does, in the submissions' lane
        async with store.transaction(lane=Lane.PROMPT) as tx:
            tx.append([QueueCreated(queue="fresh", spec=Queue(name="fresh"), requestor="admin")])

    results = await as_one_group(
        database,
        [
            create_fresh,
            lambda: submit_jobs(store, request("fresh", count=1, client_id="once"), RULES, "alice"),
            lambda: submit_jobs(store, request("fresh", count=1, client_id="once"), RULES, "alice"),
        ],
    )

    _created, first, repeated = results
    # The queue made earlier in the group exists for the submission, and the repeated client
    # id is recognised although the first job is not committed yet when it is checked.
    assert first.job_response_items[0].job_id == repeated.job_response_items[0].job_id
    assert await jobs_of(database, "fresh") == 1
    live = await view_rows(database)
    await rebuild_views(store)
    assert await view_rows(database) == live


async def test_a_failed_statement_aborts_its_group_and_the_next_group_works(database: Database) -> None:
    store = database.store

    async def broken() -> None:
        async with store.transaction() as tx:
            await (await tx.views()).execute(text("SELECT * FROM no_such_table"))

    async def good() -> int:
        return await store.append(submission(make_job()))

    groups = store.appended_groups
    gate = asyncio.Event()

    async def holder() -> int:
        async with store.transaction() as tx:
            tx.append(submission(make_job()))
            await gate.wait()
        return tx.last_seq

    tasks = [asyncio.create_task(writer()) for writer in (holder, broken, good)]
    while store._append_lock.waiting(Lane.BULK) < 2:  # noqa: ASYNC110 - no event marks queueing
        await asyncio.sleep(0.01)
    gate.set()
    held, failed, behind = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(failed, DBAPIError)
    assert held is failed  # the transaction they shared is gone
    assert behind == 2  # the writer still queued was served by a fresh group
    assert store.appended_groups == groups + 1


async def test_groups_of_random_histories_equal_their_replay(database: Database) -> None:
    """Views written by groups of many writers equal a replay of the log (the merge is exact)."""
    stream = list(RandomHistory(seed=11).events(2000))
    chunks = [stream[i : i + 37] for i in range(0, len(stream), 37)]
    store = database.store
    results = []
    for start in range(0, len(chunks), 8):  # writers queue one after the other: few groups
        results += await asyncio.gather(*(store.append(chunk) for chunk in chunks[start : start + 8]))
    assert store.appended_groups < len(chunks)
    assert results == [sum(len(c) for c in chunks[: i + 1]) for i in range(len(chunks))]
    live = await view_rows(database)
    await rebuild_views(store, batch=501)
    assert await view_rows(database) == live


@pytest.mark.parametrize("jobs", [False, True])
async def test_views_writes_staged_events_only_when_the_read_could_see_them(
    database: Database, jobs: bool
) -> None:
    store = database.store
    async with store.transaction() as first:
        first.append(submission(make_job()))
    results = await as_one_group(
        database,
        [lambda: store.append(submission(make_job(queue="q-1"))), lambda: _count_jobs_inside(database, jobs)],
    )
    assert results[1] == (3 if jobs else 1)  # the committed job, and the two staged ones if written


async def _count_jobs_inside(database: Database, jobs: bool) -> int:
    async with database.store.transaction() as tx:
        conn = await tx.views(jobs=jobs)
        return int(await conn.scalar(select(func.count()).select_from(schema.jobs)) or 0)


async def test_an_urgent_write_ends_its_group_instead_of_waiting_for_those_behind(database: Database) -> None:
    store = database.store
    groups = store.appended_groups
    gate = asyncio.Event()
    order: list[str] = []

    async def holder() -> None:
        async with store.transaction() as tx:
            tx.append(submission(make_job()))
            await gate.wait()

    async def writer(name: str, lane: Lane) -> int:
        async with store.transaction(lane=lane) as tx:
            order.append(name)
            tx.append(submission(make_job()))
        return tx.last_seq

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.05)
    normal = asyncio.create_task(writer("normal", Lane.BULK))
    urgent = asyncio.create_task(writer("decisions", Lane.URGENT))
    while not (store._append_lock.waiting(Lane.BULK) and store._append_lock.waiting(Lane.URGENT)):  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    gate.set()
    await held
    assert await urgent == 4  # committed with the holder's write, first in its group
    assert await normal == 6  # the next group
    assert order == ["decisions", "normal"]
    assert store.appended_groups == groups + 2


async def test_a_submission_goes_ahead_of_queued_bulk_writers_and_its_group_does_not_wait_for_them(
    database: Database,
) -> None:
    """Run reports (bulk) queued before a submission (prompt): the submission has the next
    turn, its group is committed without them, and each writer's events stay contiguous."""
    store = database.store
    for name in ("holder", "client"):
        await create_queue(store, Queue(name=name), "admin", GATE)
    before = await store.head()
    groups = store.appended_groups
    gate = asyncio.Event()

    async def holder() -> None:
        async with store.transaction() as tx:
            tx.append(submission(make_job(queue="holder")))
            await gate.wait()

    async def bulk(queue: str) -> int:
        return await store.append(submission(make_job(queue=queue)))

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.05)
    reports = [asyncio.create_task(bulk(f"report-{i}")) for i in range(3)]
    while store._append_lock.waiting(Lane.BULK) < 3:  # noqa: ASYNC110 - no event marks queueing
        await asyncio.sleep(0.01)
    submitted = asyncio.create_task(submit_jobs(store, request("client", count=2), RULES, "alice"))
    bad = asyncio.create_task(submit_jobs(store, request("no-such-queue"), RULES, "mallory"))
    while store._append_lock.waiting(Lane.PROMPT) < 2:  # noqa: ASYNC110 - no event marks queueing
        await asyncio.sleep(0.01)
    gate.set()
    await held
    response = await submitted
    assert not any(report.done() for report in reports)  # its group did not wait for them
    assert store.appended_groups == groups + 1
    with pytest.raises(NotFound):
        await bad  # refused alone
    assert await asyncio.gather(*reports) == [before + 2 + 4 + 2 * i for i in (1, 2, 3)]
    stored = await store.read(before)
    queues = [s.event.queue for s in stored]
    assert queues == ["holder"] * 2 + ["client"] * 4 + [q for i in range(3) for q in [f"report-{i}"] * 2]
    assert [i.job_id for i in response.job_response_items] == [
        s.event.job_id for s in stored if s.event.queue == "client" and s.event.type == "submitted"
    ]


async def test_a_big_submission_takes_the_bulk_lane(database: Database) -> None:
    """A bulk load overtaking run reports would only queue jobs faster than they drain."""
    store = database.store
    await create_queue(store, Queue(name="load"), "admin", GATE)
    lock = store._append_lock
    async with store.transaction():
        small = asyncio.create_task(submit_jobs(store, request("load", count=PROMPT_JOBS), RULES, "alice"))
        big = asyncio.create_task(submit_jobs(store, request("load", count=PROMPT_JOBS + 1), RULES, "alice"))
        while sum(map(lock.waiting, Lane)) < 2:  # noqa: ASYNC110 - no event marks queueing
            await asyncio.sleep(0.01)
        assert (lock.waiting(Lane.PROMPT), lock.waiting(Lane.BULK)) == (1, 1)
    await asyncio.gather(small, big)
    assert await jobs_of(database, "load") == 2 * PROMPT_JOBS + 1


async def test_decisions_do_not_join_a_group_a_submission_is_in(database: Database) -> None:
    """A prompt writer's group takes further prompt writers, not the decisions (urgent) that
    queued meanwhile: those start the next group, so a client never waits for their write."""
    store = database.store
    groups = store.appended_groups
    gate = asyncio.Event()

    async def writer(lane: Lane, wait: bool = False) -> int:
        async with store.transaction(lane=lane) as tx:
            tx.append(submission(make_job()))
            if wait:
                await gate.wait()
        return tx.last_seq

    before = await store.head()
    held = asyncio.create_task(writer(Lane.PROMPT, wait=True))
    await asyncio.sleep(0.05)
    decisions = asyncio.create_task(writer(Lane.URGENT))
    prompt = asyncio.create_task(writer(Lane.PROMPT))
    lock = store._append_lock
    while not (lock.waiting(Lane.URGENT) and lock.waiting(Lane.PROMPT)):  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    gate.set()
    assert await held == before + 2
    assert await prompt == before + 4  # in the held writer's group, ahead of the decisions
    assert await decisions == before + 6
    assert store.appended_groups == groups + 2


async def test_writers_that_keep_failing_do_not_hold_back_the_groups_commit(database: Database) -> None:
    """A client retrying a refused write in a loop joins the open group again and again
    (a refused writer stages nothing, so the group never fills up): the create it raced must
    still commit and become readable while the loop goes on, not only once it stops."""
    store = database.store
    await create_queue(store, Queue(name="raced"), "admin", GATE)  # every retry below is a 409
    done = asyncio.Event()
    refusals = 0

    async def retry_forever() -> None:
        nonlocal refusals
        while not done.is_set():
            try:
                await create_queue(store, Queue(name="raced"), "admin", GATE)
            except ArmadaError:
                refusals += 1

    async def readable(name: str) -> bool:
        async with database.engine.connect() as conn:
            query = select(func.count()).select_from(schema.queues).where(schema.queues.c.name == name)
            return bool(await conn.scalar(query))

    loops = [asyncio.create_task(retry_forever()) for _ in range(4)]
    try:
        await asyncio.sleep(0)
        created = asyncio.create_task(create_queue(store, Queue(name="fresh"), "admin", GATE))
        for _ in range(2_000):  # the refusals go on throughout
            if created.done() and await readable("fresh"):
                break
            await asyncio.sleep(0.005)
        assert created.done() and await readable("fresh"), f"still uncommitted after {refusals} refusals"
        assert not done.is_set()
    finally:
        done.set()
        await asyncio.gather(*loops)  # a refused writer does not wait for its group: the
        # store's close (the fixture's) waits for that group to be rolled back and closed


class _CommitWatch:
    """Records when groups begin and commit; the first commit waits until ``release`` is set
    (none: it does not wait)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log: list[str] = []
        self.second_begin = asyncio.Event()
        self.committing = asyncio.Event()
        self.release: asyncio.Event | None = None
        begin, commit = AppendGroup.begin.__func__, AppendGroup.commit  # type: ignore[attr-defined]
        watch = self

        async def watched_begin(cls: type[AppendGroup], engine: Any, *args: Any) -> AppendGroup:
            watch.log.append("begin")
            if watch.log.count("begin") == 2:
                watch.second_begin.set()
            group: AppendGroup = await begin(cls, engine, *args)
            return group

        async def watched_commit(group: AppendGroup) -> None:
            watch.log.append("commit")
            watch.committing.set()
            if watch.log.count("commit") == 1 and watch.release is not None:
                with contextlib.suppress(TimeoutError):  # (a failed test must not hang)
                    await asyncio.wait_for(watch.release.wait(), 10)
            await commit(group)
            watch.log.append("committed")

        monkeypatch.setattr(AppendGroup, "begin", classmethod(watched_begin))
        monkeypatch.setattr(AppendGroup, "commit", watched_commit)


async def bulk_write(database: Database) -> int:
    async with database.store.transaction() as tx:
        tx.append(submission(make_job()))
    return tx.last_seq


async def commit_with_a_writer_queued(
    database: Database, queued: Callable[[asyncio.Task[int]], None]
) -> None:
    """A held group that an urgent writer joins and so closes to the bulk writer queued
    behind it: the group commits while that writer (a :func:`bulk_write`, given to
    ``queued``) waits."""
    store = database.store
    gate = asyncio.Event()

    async def holder() -> None:
        async with store.transaction() as tx:
            tx.append(submission(make_job()))
            await gate.wait()

    async def urgent() -> None:
        async with store.transaction(lane=Lane.URGENT) as tx:
            tx.append(submission(make_job()))

    held = asyncio.create_task(holder())
    await asyncio.sleep(0.05)
    queued(asyncio.create_task(bulk_write(database)))
    decisions = asyncio.create_task(urgent())
    while not (store._append_lock.waiting(Lane.BULK) and store._append_lock.waiting(Lane.URGENT)):  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    gate.set()
    await held
    await decisions


async def test_the_next_group_is_begun_while_the_last_one_commits(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL the next group's lock and head are asked for during the commit, not after
    it; SQLite begins it when its writer's turn comes."""
    watch = _CommitWatch(monkeypatch)
    writers: list[asyncio.Task[int]] = []
    await commit_with_a_writer_queued(database, writers.append)
    assert await asyncio.wait_for(writers[0], 10) == 6  # dense: holder 1-2, urgent 3-4, bulk 5-6
    if database.engine.dialect.name == "postgresql":
        assert watch.log[:4] == ["begin", "commit", "begin", "committed"]
    else:
        assert watch.log[:4] == ["begin", "commit", "committed", "begin"]
    assert database.store._ahead is None


async def test_a_group_begun_ahead_that_nobody_takes_releases_the_database_lock(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer it was begun for is cancelled during the commit: the group is rolled back
    (on PostgreSQL it holds the cross-process append lock) and the next write goes through."""
    store = database.store
    postgres = database.engine.dialect.name == "postgresql"
    watch = _CommitWatch(monkeypatch)
    release = watch.release = asyncio.Event()
    writers: list[asyncio.Task[int]] = []

    async def cancel_the_writer() -> None:
        await (watch.second_begin if postgres else watch.committing).wait()
        writers[0].cancel()
        release.set()

    canceller = asyncio.create_task(cancel_the_writer())
    await commit_with_a_writer_queued(database, writers.append)
    await canceller
    with pytest.raises(asyncio.CancelledError):
        await writers[0]
    while store._committing:  # the commit, and the abandoned group's rollback
        await asyncio.wait(set(store._committing))
    assert store._ahead is None
    if postgres:  # another replica could append now
        async with database.engine.connect() as conn:
            query = text("SELECT pg_try_advisory_xact_lock(:key)").bindparams(key=dialects.APPEND_LOCK_KEY)
            assert await conn.scalar(query) is True
    assert await asyncio.wait_for(bulk_write(database), 10) == 6
    async with database.engine.connect() as conn:
        assert await conn.scalar(select(func.max(schema.events.c.seq))) == 6


async def test_work_left_for_the_commit_runs_last_and_learns_which_jobs_later_writers_touched(
    database: Database,
) -> None:
    store = database.store
    before, later = make_job(queue="before"), make_job(queue="later")
    told: list[tuple[set[str], int]] = []

    async def work(conn: AsyncConnection, touched: Collection[str]) -> None:  # (as retention's deletes)
        staged = await conn.scalar(
            select(func.count()).select_from(schema.jobs).where(schema.jobs.c.queue == "later")
        )
        told.append((set(touched), int(staged)))

    async def appends(job: Job) -> None:
        async with store.transaction() as tx:
            tx.append(submission(job))

    async def leaves_work() -> None:
        async with store.transaction() as tx:
            tx.at_commit(work)

    await as_one_group(database, [lambda: appends(before), leaves_work, lambda: appends(later)])
    assert told == [({later.id}, 1)]  # after every writer's events, in their transaction
