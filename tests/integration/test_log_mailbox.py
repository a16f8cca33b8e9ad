"""The log-request mailbox on both databases: each order is handed out once, answers go to
the row of the executor that was asked, and rows nobody waits for are cleared away."""

from __future__ import annotations

import asyncio

import msgspec
from sqlalchemy import func, select

from armada.eventstore.database import Database
from armada.eventstore.log_mailbox import KEEP_SECONDS, LogMailbox, answer_topic, orders_topic
from armada.eventstore.schema import log_requests
from armada.model.leases import LogAnswer, LogOrder
from armada.model.wire.logs import LogLine


def order(request_id: str) -> LogOrder:
    return LogOrder(request_id=request_id, run_id="r1", job_id="j1", tail_lines=5)


async def rows(database: Database) -> int:
    async with database.engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(log_requests))).scalar_one())


async def test_orders_are_handed_out_once_and_answered_by_their_executor(database: Database) -> None:
    mailbox = LogMailbox(database.engine, database.signals)
    posted = database.signals.subscribe(orders_topic("c1"))
    await mailbox.post("c1", order("a"), now=1000.0)
    assert posted.is_set()
    assert await mailbox.take("c2", now=1000.0) == []
    assert await mailbox.take("c1", now=1000.0) == [order("a")]
    assert await mailbox.take("c1", now=1001.0) == []  # handed out once

    assert await mailbox.collect("a") is None
    lines = [LogLine(timestamp="2026-11-24T03:00:00Z", line="x")]
    assert not await mailbox.answer(LogAnswer(executor_id="c2", request_id="a", lines=lines), now=1000.0)
    answered = database.signals.subscribe(answer_topic("a"))
    assert await mailbox.answer(LogAnswer(executor_id="c1", request_id="a", lines=lines), now=1000.0)
    assert answered.is_set()
    assert not await mailbox.answer(LogAnswer(executor_id="c1", request_id="a"), now=1000.0)  # once
    collected = await mailbox.collect("a")
    assert collected is not None and collected.lines == lines
    assert await rows(database) == 0  # collected: gone


async def test_withdrawn_and_stale_requests_are_deleted(database: Database) -> None:
    mailbox = LogMailbox(database.engine, database.signals)
    await mailbox.post("c1", order("old"), now=1000.0)
    await mailbox.post("c1", order("gave-up"), now=1000.0)
    await mailbox.withdraw("gave-up")
    assert not await mailbox.answer(LogAnswer(executor_id="c1", request_id="gave-up"), now=1000.0)
    await mailbox.post("c1", order("new"), now=1000.0 + KEEP_SECONDS + 1)
    assert [o.request_id for o in await mailbox.take("c1", now=2000.0)] == ["new"]
    assert await rows(database) == 1


async def test_many_executors_polling_at_once_each_get_their_own(database: Database) -> None:
    mailbox = LogMailbox(database.engine, database.signals)
    for index in range(6):
        await mailbox.post(f"c{index % 3}", order(f"q{index}"), now=1000.0)
    taken = await asyncio.gather(*(mailbox.take(f"c{i % 3}", now=1000.0) for i in range(6)))
    ids = sorted(o.request_id for batch in taken for o in batch)
    assert ids == [f"q{i}" for i in range(6)]  # every order once, none twice


async def test_answers_are_stored_compressed_and_swept_once_nobody_can_wait_for_them(
    database: Database,
) -> None:
    """An answer whose waiter went away (its replica died) does not outlive ``KEEP_SECONDS``:
    the next answer sweeps it; what is stored is smaller than the lines."""
    mailbox = LogMailbox(database.engine, database.signals)
    lines = [LogLine(timestamp="2026-11-24T03:00:00.000000000Z", line="y") for _ in range(10_000)]
    await mailbox.post("c1", order("orphan"), now=1000.0)
    assert await mailbox.answer(LogAnswer(executor_id="c1", request_id="orphan", lines=lines), now=1000.0)
    async with database.engine.connect() as conn:
        stored = (await conn.execute(select(log_requests.c.answer))).scalar_one()
    assert len(stored) < len(msgspec.json.encode(lines)) // 10
    await mailbox.post("c1", order("later"), now=1000.0 + KEEP_SECONDS / 2)
    late = 1000.0 + KEEP_SECONDS + 1
    assert await mailbox.answer(LogAnswer(executor_id="c1", request_id="later"), now=late)
    async with database.engine.connect() as conn:
        left = (await conn.execute(select(log_requests.c.request_id))).scalars().all()
    assert left == ["later"]
