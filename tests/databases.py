"""Throwaway databases for tests: a SQLite file, or a fresh PostgreSQL database.

PostgreSQL tests use ``ARMADA_TEST_DATABASE_URL`` (a server URL whose database is only used
to create and drop per-test databases). Without it they are skipped; CI always sets it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from armada.eventstore import audit
from armada.eventstore.database import Database
from armada.eventstore.dialects import libpq_conninfo, normalise_url

PG_ADMIN_URL = os.environ.get("ARMADA_TEST_DATABASE_URL", "")

#: The kinds a database-backed test runs on, each once.
DATABASE_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
#: Module marks: the module's ``server`` (in-process or a process) runs on one kind only.
SQLITE_ONLY = pytest.mark.parametrize("database_kind", ["sqlite"], indirect=True)
POSTGRES_ONLY = pytest.mark.parametrize("database_kind", DATABASE_KINDS[1:], indirect=True)


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'armada.db'}"


@contextmanager
def postgres_database() -> Iterator[str]:
    """Create a uniquely named PostgreSQL database, yield its URL, then drop it."""
    if not PG_ADMIN_URL:
        pytest.skip("ARMADA_TEST_DATABASE_URL is not set")
    name = f"armada_test_{uuid.uuid4().hex[:16]}"
    admin = libpq_conninfo(PG_ADMIN_URL)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield normalise_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def database_url_for(kind: str, directory: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield sqlite_url(directory)
    else:
        with postgres_database() as url:
            yield url


async def view_rows(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every view's rows, in primary-key order, for exact comparison (as ``admin check`` reads them)."""
    async with db.engine.connect() as conn:
        return await audit.view_rows(conn)
