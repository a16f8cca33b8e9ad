"""Write side of the operators' fleet controls: ``executor_settings`` and ``node_cordons``.

These change rarely, so each event is applied on its own, in log order. Forgetting an
executor drops its ``executors`` row, its nodes and its node cordons; its settings stay
(an executor cordoned before a rebuild of its cluster stays cordoned when it rejoins).
"""

from __future__ import annotations

from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.model import events as ev

CordonEvent = (
    ev.ExecutorSettingsUpserted | ev.ExecutorSettingsDeleted | ev.NodeCordonChanged | ev.ExecutorDeleted
)


async def apply_cordon_event(conn: AsyncConnection, event: CordonEvent) -> None:
    settings, cordons = schema.executor_settings, schema.node_cordons
    match event:
        case ev.ExecutorSettingsUpserted():
            await conn.execute(delete(settings).where(settings.c.executor_id == event.executor_id))
            row = {
                "executor_id": event.executor_id,
                "cordoned": event.cordoned,
                "cordon_reason": event.cordon_reason,
                "set_by": event.requestor,
                "updated": event.created,
            }
            await conn.execute(insert(settings).values(row))
        case ev.ExecutorSettingsDeleted():
            await conn.execute(delete(settings).where(settings.c.executor_id == event.executor_id))
        case ev.NodeCordonChanged():
            node = (cordons.c.executor_id == event.executor_id) & (cordons.c.name == event.node)
            await conn.execute(delete(cordons).where(node))
            if event.cordoned:
                row = {
                    "executor_id": event.executor_id,
                    "name": event.node,
                    "reason": event.reason,
                    "set_by": event.requestor,
                    "updated": event.created,
                }
                await conn.execute(insert(cordons).values(row))
        case ev.ExecutorDeleted():
            for table in (schema.executors, schema.nodes, cordons):
                await conn.execute(delete(table).where(table.c.executor_id == event.executor_id))
