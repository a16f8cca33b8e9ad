from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.eventstore.database import Database
from armada.model.queues import Queue
from tests.databases import DATABASE_KINDS, database_url_for
from tests.installed import Installed, built_wheel, pipx_install
from tests.processes import Serve, Served, Server, served

#: Fixtures shared by modules of several directories.
pytest_plugins = ["tests.oidc_provider"]


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


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def database_kind(request: pytest.FixtureRequest) -> str:
    """The database kind of the module's ``server``: each in turn, or one where the module is
    marked ``tests.databases.SQLITE_ONLY`` or ``POSTGRES_ONLY``."""
    kind: str = request.param
    return kind


@pytest.fixture(scope="module")
def serve() -> Serve:
    """How the module's ``armada serve`` runs; a module that needs more overrides it."""
    return Serve()


@pytest.fixture(scope="module")
def server(serve: Serve, database_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One real ``armada serve`` process per module and database kind, run as ``serve`` says
    (``tests/api`` serves in-process instead)."""
    with served(serve, database_kind, tmp_path_factory.mktemp(f"serve-{database_kind}")) as running:
        yield running


@pytest.fixture
def fresh_server(serve: Serve, database_kind: str, tmp_path: Path) -> Iterator[Server]:
    """A server of the test's own, for tests whose executors and nodes must not outlive them."""
    with served(serve, database_kind, tmp_path) as running:
        yield running


@pytest.fixture
def client(server: Served) -> Iterator[ArmadaClient]:
    """A client of the ``server`` fixture."""
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
