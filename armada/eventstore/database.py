"""Open a database: engine, migrations, event store and change notification together."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore import dialects, migrate
from armada.eventstore.notify import ChangeNotifier, PgListener, Signals
from armada.eventstore.store import EventStore


class Database:
    """Everything the server needs from its database, opened and closed as one."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        self.engine: AsyncEngine = dialects.create_engine(url, pool_size=pool_size)
        self.notifier = ChangeNotifier()
        self.store = EventStore(self.engine, self.notifier)
        #: Wake-ups other than log appends, shared with other replicas on PostgreSQL.
        self.signals = Signals()
        self._listener: PgListener | None = None

    @property
    def is_postgres(self) -> bool:
        return dialects.is_postgres(self.engine)

    async def open(self, *, migrate_schema: bool = True, listen: bool = True) -> Database:
        """Upgrade the schema if asked, learn the log's head, and start listening."""
        if migrate_schema:
            await migrate.upgrade(self.engine)
        self.notifier.publish(await self.store.head())
        if listen and self.is_postgres:
            self._listener = PgListener(self.url, self.notifier, self.signals)
            self._listener.start()
        return self

    async def ping(self) -> None:
        """Raise if the database does not answer."""
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def close(self) -> None:
        """Let the writes under way finish (see :meth:`EventStore.close`), then let go of it all."""
        await self.store.close()
        if self._listener is not None:
            await self._listener.stop()
        await self.engine.dispose()
