"""Schema migrations (Alembic), run programmatically on the store's own engine.

``armada serve`` upgrades an empty or older database automatically, and refuses to start
on a database migrated by a newer armada than this one.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import armada


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer version of armada."""


def migrations_dir() -> Path:
    """The Alembic scripts: packaged inside ``armada`` when installed, else the repo's."""
    packaged = Path(armada.__file__).parent / "_migrations"
    return packaged if packaged.is_dir() else Path(armada.__file__).parent.parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = connection
    return config


def _check_not_newer(connection: Connection) -> None:
    current = MigrationContext.configure(connection).get_current_revision()
    if current is None:
        return
    scripts = ScriptDirectory.from_config(alembic_config())
    try:
        scripts.get_revision(current)
    except CommandError as exc:
        raise SchemaTooNew(
            f"the database schema is at revision {current!r}, newer than this armada "
            f"{armada.__version__} knows (head {scripts.get_current_head()!r}); upgrade armada"
        ) from exc


def _upgrade(connection: Connection, revision: str) -> None:
    _check_not_newer(connection)
    command.upgrade(alembic_config(connection), revision)


def _downgrade(connection: Connection, revision: str) -> None:
    command.downgrade(alembic_config(connection), revision)


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade, revision)


async def downgrade(engine: AsyncEngine, revision: str) -> None:
    async with engine.begin() as conn:
        await conn.run_sync(_downgrade, revision)


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(lambda sync: MigrationContext.configure(sync).get_current_revision())
