"""SQLite's write-ahead log, copied into the database off the event loop's thread.

Appends commit on the loop's thread (:mod:`.sqlite_driver`), and the COMMIT that fills
SQLite's log to its auto-checkpoint size would copy the log into the database and sync it
there: ~13 ms on this host's disk, during which the loop serves nobody. So connections do
not checkpoint on their own (``wal_autocheckpoint=0``, :mod:`.dialects`); the store asks
for a passive checkpoint, on a connection's own thread, every :data:`CHECKPOINT_EVENTS`
appended events. (SQLite also checkpoints when a database's last connection closes.)
"""

from __future__ import annotations

import asyncio

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore import dialects

log = structlog.get_logger(__name__)

#: Events appended between checkpoints: a few megabytes of log (events and view rows).
CHECKPOINT_EVENTS = 2_000


class Checkpoints:
    """Starts a checkpoint once enough events were appended since the last (SQLite only)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._enabled = not dialects.is_postgres(engine)
        self._events = 0
        self._running: asyncio.Task[None] | None = None

    def appended(self, count: int) -> asyncio.Task[None] | None:
        """Count ``count`` committed events; return the checkpoint this started, if any."""
        if not self._enabled:
            return None
        self._events += count
        if self._events < CHECKPOINT_EVENTS or (self._running is not None and not self._running.done()):
            return None
        self._events = 0
        self._running = asyncio.create_task(self._checkpoint(), name="sqlite-checkpoint")
        return self._running

    async def _checkpoint(self) -> None:
        try:
            async with self._engine.connect() as conn:
                await dialects.checkpoint(conn)
        except Exception as exc:  # the log only grows until the next one
            log.warning("write-ahead log checkpoint failed", error=str(exc))
