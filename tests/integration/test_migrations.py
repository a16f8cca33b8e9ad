"""One Alembic history for both databases: single head, reversible, matches the schema."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore import dialects, migrate
from armada.eventstore.database import Database
from armada.eventstore.schema import metadata


def test_history_has_a_single_head() -> None:
    assert len(ScriptDirectory.from_config(migrate.alembic_config()).get_heads()) == 1


async def test_upgrade_downgrade_upgrade(database_url: str) -> None:
    engine = dialects.create_engine(database_url)
    try:
        await migrate.upgrade(engine)
        head = await migrate.current_revision(engine)
        assert head is not None
        await migrate.downgrade(engine, "base")
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        assert set(tables) <= {"alembic_version"}
        await migrate.upgrade(engine)
        assert await migrate.current_revision(engine) == head
    finally:
        await engine.dispose()


async def test_migrated_schema_matches_the_table_definitions(database: Database) -> None:
    async with database.engine.connect() as conn:
        diff = await conn.run_sync(lambda sync: compare_metadata(MigrationContext.configure(sync), metadata))
    assert diff == []


async def _migrated_by_a_newer_version(engine: AsyncEngine, steps_ahead: int | None) -> None:
    """Make the database look migrated by a future version ``steps_ahead`` contract steps
    ahead of this one (None: one that recorded no steps)."""
    await migrate.upgrade(engine)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
        if steps_ahead is None:
            await conn.execute(text("DROP TABLE schema_compatibility"))
        else:
            steps = migrate.contract_steps(migrate.head()) + steps_ahead
            await conn.execute(text(f"UPDATE schema_compatibility SET contract_steps = {steps}"))


@pytest.mark.parametrize("steps_ahead", [0, 1])
async def test_runs_on_a_newer_database_up_to_one_contract_step_ahead(
    database_url: str, steps_ahead: int
) -> None:
    engine = dialects.create_engine(database_url)
    try:
        await _migrated_by_a_newer_version(engine, steps_ahead)
        await migrate.upgrade(engine)  # no error, and the newer schema is left as it is
        assert await migrate.current_revision(engine) == "9999_future"
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("steps_ahead", "why"), [(2, "2 contract steps ahead"), (None, "an unknown number of contract steps")]
)
async def test_refuses_a_database_two_contract_steps_ahead(
    database_url: str, steps_ahead: int | None, why: str
) -> None:
    engine = dialects.create_engine(database_url)
    try:
        await _migrated_by_a_newer_version(engine, steps_ahead)
        with pytest.raises(migrate.SchemaTooNew, match=why):
            await migrate.upgrade(engine)
    finally:
        await engine.dispose()


async def test_records_the_contract_steps_of_the_revision_it_migrated_to(database: Database) -> None:
    status = await migrate.status(database.engine)
    assert status.revision == status.head == migrate.head()
    assert status.contract_steps == migrate.contract_steps(migrate.head())


def test_every_migration_declares_expand_or_contract() -> None:
    scripts = ScriptDirectory.from_config(migrate.alembic_config())
    for script in scripts.walk_revisions():
        assert migrate.phase_of(script.revision) in {"expand", "contract"}, script.revision


async def test_migrated_tables_have_the_defined_storage_parameters(database: Database) -> None:
    """Alembic's comparison ignores table options; PostgreSQL's fill factors are checked here."""
    async with database.engine.connect() as conn:
        if conn.dialect.name != "postgresql":
            pytest.skip("storage parameters are PostgreSQL's")
        rows = await conn.execute(text("SELECT relname, reloptions FROM pg_class WHERE relkind = 'r'"))
        stored = {name: sorted(options or []) for name, options in rows}
    options = {table.name: table.dialect_options["postgresql"]["with"] for table in metadata.sorted_tables}
    defined = {name: sorted(f"{k}={v}" for k, v in given.items()) for name, given in options.items() if given}
    assert defined, "no table defines storage parameters"
    assert {name: stored[name] for name in defined} == defined
