"""Schema migrations (Alembic), run programmatically on the store's own engine.

``armada serve`` upgrades an empty or older database automatically. Migrations are made in
expand and contract steps (docs/development.md, "Schema changes"), so a database migrated
by a newer version still serves this one unless it is *two* contract steps ahead of this
version's head: that is the only database it refuses, and it says why. Each migration
module declares its ``phase``; after every upgrade the count of contract steps applied is
written to ``schema_compatibility``, where an older replica reads it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

import structlog
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, insert, inspect, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

import armada
from armada.eventstore import dialects, schema, sqlite_stats, usage

log = structlog.get_logger(__name__)
#: A version runs on a database up to this many contract steps ahead of its own head.
CONTRACT_STEPS_TOLERATED = 1


class SchemaTooNew(RuntimeError):
    """The database was migrated by a version of armada too new for this one to run on."""


class SchemaStatus(NamedTuple):
    """The database's schema next to this version's."""

    #: The database's revision (None: never migrated).
    revision: str | None
    #: The newest revision this version knows.
    head: str
    #: Contract steps recorded in the database (None: not recorded, or never migrated).
    contract_steps: int | None


def migrations_dir() -> Path:
    """The Alembic scripts: packaged inside ``armada`` when installed, else the repo's."""
    packaged = Path(armada.__file__).parent / "_migrations"
    return packaged if packaged.is_dir() else Path(armada.__file__).parent.parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = connection
    return config


@functools.cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head() -> str:
    """This version's newest revision."""
    found = _scripts().get_current_head()
    assert found is not None, "the migrations have a single head (a test checks it)"
    return found


def phase_of(revision: str) -> str:
    """A migration's declared phase: ``expand`` (the default) or ``contract``."""
    return str(getattr(_scripts().get_revision(revision).module, "phase", "expand"))


def contract_steps(revision: str | None) -> int:
    """How many contract migrations lead from the empty schema to ``revision``."""
    if revision is None:
        return 0
    scripts = _scripts().walk_revisions("base", revision)
    return sum(phase_of(script.revision) == "contract" for script in scripts)


def _knows(revision: str) -> bool:
    try:
        _scripts().get_revision(revision)
    except CommandError:
        return False
    return True


def _status(connection: Connection) -> SchemaStatus:
    revision = MigrationContext.configure(connection).get_current_revision()
    steps = None
    if revision is not None and inspect(connection).has_table(schema.schema_compatibility.name):
        steps = connection.execute(select(schema.schema_compatibility.c.contract_steps)).scalar()
    return SchemaStatus(revision, head(), steps)


def _newer_but_compatible(status: SchemaStatus) -> bool:
    """True when the database is newer than this version and still serves it; raises
    :class:`SchemaTooNew` when it no longer does; False when this version knows it."""
    if status.revision is None or _knows(status.revision):
        return False
    own = contract_steps(status.head)
    if status.contract_steps is None or status.contract_steps - own > CONTRACT_STEPS_TOLERATED:
        ahead = "an unknown number of" if status.contract_steps is None else status.contract_steps - own
        raise SchemaTooNew(
            f"the database schema is at revision {status.revision!r}, {ahead} contract steps ahead of "
            f"this armada {armada.__version__} (head {status.head!r}): a newer version has removed what "
            f"this one uses; upgrade armada"
        )
    log.warning(
        "database schema newer than this version: running on it without migrating",
        revision=status.revision,
        head=status.head,
        contract_steps_ahead=status.contract_steps - own,
    )
    return True


def _record_steps(connection: Connection) -> None:
    revision = MigrationContext.configure(connection).get_current_revision()
    table = schema.schema_compatibility
    if revision is None or not inspect(connection).has_table(table.name):
        return
    row = {"contract_steps": contract_steps(revision), "revision": revision}
    recorded = connection.execute(select(table.c.contract_steps, table.c.revision)).mappings().first()
    if recorded is None:
        connection.execute(insert(table).values(id=1, **row))
    elif dict(recorded) != row:  # written only when it changes: replicas start concurrently
        connection.execute(update(table).values(**row))


def _upgrade(connection: Connection, revision: str) -> bool:
    """Migrate; return whether this created the usage rollups (the log must be counted into them)."""
    if _newer_but_compatible(_status(connection)):
        return False
    had_rollups = inspect(connection).has_table(schema.usage.name)
    command.upgrade(alembic_config(connection), revision)
    _record_steps(connection)
    return not had_rollups and inspect(connection).has_table(schema.usage.name)


def _downgrade(connection: Connection, revision: str) -> None:
    command.downgrade(alembic_config(connection), revision)
    _record_steps(connection)


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Migrate to ``revision``; on a newer database, check that it still serves this version
    and leave it as it is (raises :class:`SchemaTooNew` if it does not). On SQLite, then
    write the planner's statistics (:mod:`.sqlite_stats`)."""
    async with engine.begin() as conn:
        if await conn.run_sync(_upgrade, revision):
            await usage.count_log(conn)
        if not dialects.is_postgres(conn):
            await conn.run_sync(sqlite_stats.write)


async def downgrade(engine: AsyncEngine, revision: str) -> None:
    async with engine.begin() as conn:
        await conn.run_sync(_downgrade, revision)


async def status(engine: AsyncEngine) -> SchemaStatus:
    async with engine.connect() as conn:
        return await conn.run_sync(_status)


async def current_revision(engine: AsyncEngine) -> str | None:
    return (await status(engine)).revision
