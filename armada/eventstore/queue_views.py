"""Read side of the ``queues`` view: queue specs by name, as services and the scheduler read them.

Specs are returned as stored (JSON); decoding, and what to do with one this version cannot
read, is the caller's business (a 409, a report, or leaving the queue out).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import Row, bindparam, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.eventstore.views import rows_in
from armada.model.lifecycle import UNFINISHED_JOB_STATES

#: Built once: every submission reads its queue (SQLAlchemy builds a query slower than SQLite runs it).
_QUEUE_SPEC = select(schema.queues.c.spec).where(schema.queues.c.name == bindparam("name"))


async def queue_spec(conn: AsyncConnection, name: str) -> Any:
    """The stored spec of queue ``name``, or ``None`` if there is no such queue."""
    return await conn.scalar(_QUEUE_SPEC, {"name": name})


async def queue_exists(conn: AsyncConnection, name: str) -> bool:
    """Whether the queue exists, without reading its spec (a damaged one can be replaced)."""
    return bool(await conn.scalar(select(exists().where(schema.queues.c.name == name))))


async def queue_specs(
    conn: AsyncConnection, *, by_name: bool = False, limit: int | None = None
) -> list[Row[str, Any]]:
    """``(name, spec)`` of every queue (in name order if ``by_name``), or the first ``limit``
    (0 or none: all)."""
    queues = schema.queues
    query = select(queues.c.name, queues.c.spec)
    if by_name:
        query = query.order_by(queues.c.name)
    if limit:
        query = query.limit(limit)
    return list((await conn.execute(query)).all())


async def queue_specs_named(conn: AsyncConnection, names: Collection[str]) -> list[Row[Any]]:
    """``(name, spec)`` of those of ``names`` that exist."""
    queues = schema.queues
    return await rows_in(conn, select(queues.c.name, queues.c.spec), queues.c.name, names)


async def queue_has_unfinished_jobs(conn: AsyncConnection, name: str) -> bool:
    """Whether queue ``name`` has jobs that are queued or running (it may not be deleted then)."""
    states = schema.job_states
    unfinished = [state.value for state in UNFINISHED_JOB_STATES]
    return bool(
        await conn.scalar(select(exists().where(states.c.queue == name, states.c.state.in_(unfinished))))
    )
