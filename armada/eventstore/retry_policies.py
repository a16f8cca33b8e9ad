"""Write side of the ``retry_policies`` view: one row per policy, the spec as stored."""

from __future__ import annotations

import msgspec
from sqlalchemy import delete, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.model import events as ev

PolicyEvent = ev.RetryPolicyCreated | ev.RetryPolicyUpdated | ev.RetryPolicyDeleted


async def apply_retry_policy_event(conn: AsyncConnection, event: PolicyEvent) -> None:
    """Apply one policy event in log order (policies change rarely: no batching needed)."""
    table = schema.retry_policies
    match event:
        case ev.RetryPolicyCreated():
            spec = msgspec.to_builtins(event.spec)
            row = {"name": event.spec.name, "spec": spec, "created": event.created, "updated": event.created}
            await conn.execute(insert(table).values(row))
        case ev.RetryPolicyUpdated():
            spec = msgspec.to_builtins(event.spec)
            await conn.execute(
                update(table).where(table.c.name == event.spec.name).values(spec=spec, updated=event.created)
            )
        case ev.RetryPolicyDeleted():
            await conn.execute(delete(table).where(table.c.name == event.name))
