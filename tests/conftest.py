from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

import pytest

from armada.client import ArmadaClient
from armada.eventstore.database import Database
from armada.model.queues import Queue
from tests.databases import database_url_for
from tests.installed import Installed, built_wheel, pipx_install

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


class Served(Protocol):
    url: str


@pytest.fixture
def client(server: Served) -> Iterator[ArmadaClient]:
    """A client of the ``server`` fixture (each directory that serves defines its own)."""
    with ArmadaClient(server.url) as armada:
        yield armada


@pytest.fixture
def queue(client: ArmadaClient) -> str:
    """A fresh queue for this test."""
    name = f"q-{uuid.uuid4().hex[:12]}"
    client.create_queue(Queue(name=name))
    return name


@pytest.fixture(scope="session")
def installed_armada(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """This project's wheel installed with pipx in a throwaway home (tests/installed.py): made
    once per run for the wheel's smoke test and the Airflow coexistence test."""
    wheel = built_wheel(tmp_path_factory.mktemp("dist"))
    return pipx_install(wheel, tmp_path_factory.mktemp("pipx"))
