"""The lease protocol's services, started on a fresh database of each kind (tests/harness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from armada.eventstore.database import Database
from tests.harness import Harness, started


@pytest.fixture
async def harness(database: Database) -> AsyncIterator[Harness]:
    async with started(Harness(database)) as h:
        yield h
