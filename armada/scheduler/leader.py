"""Leader election: exactly one replica schedules at a time.

On PostgreSQL the leader holds a session-level advisory lock on a connection of its own;
if the leader dies its session ends, the lock is released, and a standby that keeps
trying takes over. On SQLite the database belongs to one process, which always leads.
"""

from __future__ import annotations

import contextlib

import psycopg
import structlog

from armada.eventstore.dialects import libpq_conninfo, normalise_url

log = structlog.get_logger(__name__)

#: Advisory lock key of the scheduler's leadership (arbitrary, fixed; distinct from the append lock).
LEADER_LOCK_KEY = 0x4C454144  # "LEAD"


class LeaderElection:
    """Tracks whether this replica leads; ``ensure()`` tries to (re)gain leadership."""

    def __init__(self, database_url: str) -> None:
        self._postgres = normalise_url(database_url).get_backend_name() == "postgresql"
        self._conninfo = libpq_conninfo(database_url) if self._postgres else ""
        self._connection: psycopg.AsyncConnection[tuple[object, ...]] | None = None

    @property
    def is_leader(self) -> bool:
        return not self._postgres or self._connection is not None

    async def ensure(self) -> bool:
        """True if this replica leads now: verify a held lock is still alive, else try to take it."""
        if not self._postgres:
            return True
        if self._connection is not None:
            try:
                await self._connection.execute("SELECT 1")
                return True
            except psycopg.Error as exc:
                log.warning("lost scheduler leadership", error=str(exc))
                await self.release()
        try:
            connection = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except psycopg.Error:
            return False
        cursor = await connection.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK_KEY,))
        row = await cursor.fetchone()
        if row is not None and row[0]:
            self._connection = connection
            log.info("became scheduler leader")
            return True
        await connection.close()
        return False

    async def release(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(psycopg.Error):
                await self._connection.close()
            self._connection = None
