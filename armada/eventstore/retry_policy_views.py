"""Read side of the ``retry_policies`` view (:mod:`.retry_policies` is the write side).

Specs are returned as stored; the services decode them and decide what an unreadable one means.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema


async def policy_exists(conn: AsyncConnection, name: str) -> bool:
    table = schema.retry_policies
    return bool(await conn.scalar(select(exists().where(table.c.name == name))))


async def policy_spec(conn: AsyncConnection, name: str) -> Any:
    """The stored spec of policy ``name``, or ``None`` if there is no such policy."""
    table = schema.retry_policies
    return await conn.scalar(select(table.c.spec).where(table.c.name == name))


async def policy_specs(conn: AsyncConnection, *, by_name: bool = False) -> list[Row[str, Any]]:
    """``(name, spec)`` of every policy, in name order if ``by_name``."""
    table = schema.retry_policies
    query = select(table.c.name, table.c.spec)
    if by_name:
        query = query.order_by(table.c.name)
    return list((await conn.execute(query)).all())
