from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from armada.eventstore.database import Database
from tests.databases import database_url_for

DATABASE_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=DATABASE_KINDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of each kind (the test runs once per kind)."""
    with database_url_for(request.param, tmp_path) as url:
        yield url


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    """An open, migrated database with its event store."""
    db = await Database(database_url).open()
    try:
        yield db
    finally:
        await db.close()
