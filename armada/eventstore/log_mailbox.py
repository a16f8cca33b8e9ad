"""The log-request mailbox: how a log read crosses replicas without the server calling a cluster.

A replica asked for a log posts a :class:`LogOrder` here for the executor that ran the job
and waits; whichever replica holds that executor's lease long-poll takes it and hands it
out; the executor's answer, posted to any replica, is stored on the same row. Every step
signals the next (:class:`~armada.eventstore.notify.Signals`, ``NOTIFY`` on PostgreSQL),
so nobody polls. Rows are transient messages, not state: never replayed, and deleted once
the answer is collected, when the waiter gives up, or a minute after being asked (swept by
every post and answer). Answers are stored compressed (log text shrinks several-fold) and
are as small as the server's ``scheduler.maxLogBytes`` allows.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec
from sqlalchemy import delete, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from armada.eventstore import dialects
from armada.eventstore.notify import Signals
from armada.eventstore.schema import log_requests as table
from armada.model.leases import LogAnswer, LogOrder

#: Rows older than this are deleted (longer than any wait for an answer may last).
KEEP_SECONDS = 60.0
_decode_order = msgspec.json.Decoder(LogOrder).decode
_decode_answer = msgspec.json.Decoder(LogAnswer).decode


def orders_topic(executor_id: str) -> str:
    """Signalled when a log request for ``executor_id`` is posted."""
    return f"logs:{executor_id}"


def answer_topic(request_id: str) -> str:
    """Signalled when the answer to ``request_id`` is stored."""
    return f"log-answer:{request_id}"


class LogMailbox:
    def __init__(self, engine: AsyncEngine, signals: Signals) -> None:
        self.engine = engine
        self.signals = signals

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as raw:
            conn = await raw.execution_options(**{dialects.WRITE_OPTION: True})
            async with conn.begin():
                yield conn

    async def post(self, executor_id: str, order: LogOrder, now: float) -> None:
        """Leave ``order`` for ``executor_id`` (and clear out rows nobody waits for any more)."""
        async with self._write() as conn:
            await _sweep(conn, now)
            await conn.execute(
                insert(table).values(
                    request_id=order.request_id,
                    executor_id=executor_id,
                    order=msgspec.json.encode(order),
                    asked=now,
                )
            )
            await dialects.signal(conn, orders_topic(executor_id))
        self.signals.publish(orders_topic(executor_id))

    async def take(self, executor_id: str, now: float) -> list[LogOrder]:
        """Orders for ``executor_id`` not handed out yet; each is handed out once (one
        statement: concurrent takers never get the same order)."""
        async with self._write() as conn:
            taken = await conn.execute(
                update(table)
                .where(table.c.executor_id == executor_id, table.c.taken.is_(None))
                .values(taken=now)
                .returning(table.c.order)
            )
            return [_decode_order(row.order) for row in taken]

    async def answer(self, answer: LogAnswer, now: float) -> bool:
        """Store the answer; False if no request of that executor has that id (any more)."""
        async with self._write() as conn:
            await _sweep(conn, now)
            result = await conn.execute(
                update(table)
                .where(
                    table.c.request_id == answer.request_id,
                    table.c.executor_id == answer.executor_id,
                    table.c.answer.is_(None),
                )
                .values(answer=zlib.compress(msgspec.json.encode(answer), 1))
            )
            if not result.rowcount:
                return False
            await dialects.signal(conn, answer_topic(answer.request_id))
        self.signals.publish(answer_topic(answer.request_id))
        return True

    async def collect(self, request_id: str) -> LogAnswer | None:
        """The answer to ``request_id`` once stored (its row is then deleted), else None."""
        async with self._write() as conn:
            row = (
                await conn.execute(
                    delete(table)
                    .where(table.c.request_id == request_id, table.c.answer.is_not(None))
                    .returning(table.c.answer)
                )
            ).first()
        return _decode_answer(zlib.decompress(row.answer)) if row is not None else None

    async def withdraw(self, request_id: str) -> None:
        """Nobody waits for ``request_id`` any more."""
        async with self._write() as conn:
            await conn.execute(delete(table).where(table.c.request_id == request_id))


async def _sweep(conn: AsyncConnection, now: float) -> None:
    """Delete rows nobody can be waiting for any more (a waiter on a replica that died)."""
    await conn.execute(delete(table).where(table.c.asked < now - KEEP_SECONDS))
