"""The leader's latest scheduling reports, stored so that any replica can answer with them.

Only the leader schedules; a report asked of a standby replica (or of another worker of
``serve --workers``, which share one port) would otherwise find no cycle. The leader
overwrites one row per report name; readers take whatever was last written.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore import dialects
from armada.eventstore.schema import scheduler_reports as table


async def save_report(engine: AsyncEngine, name: str, body: bytes) -> None:
    """Replace the report called ``name``."""
    async with engine.connect() as raw:
        conn = await raw.execution_options(**{dialects.WRITE_OPTION: True})
        async with conn.begin():
            await conn.execute(delete(table).where(table.c.name == name))
            await conn.execute(insert(table).values(name=name, body=body, written=datetime.now(UTC)))


async def load_report(engine: AsyncEngine, name: str) -> bytes | None:
    """The report called ``name`` as last saved, or ``None`` if none was."""
    async with engine.connect() as conn:
        body = (await conn.execute(select(table.c.body).where(table.c.name == name))).scalar_one_or_none()
    return bytes(body) if body is not None else None


async def report_written(engine: AsyncEngine, name: str) -> datetime | None:
    """When the report called ``name`` was last saved (cheap: a reader checks before loading)."""
    async with engine.connect() as conn:
        written = (
            await conn.execute(select(table.c.written).where(table.c.name == name))
        ).scalar_one_or_none()
    return written
