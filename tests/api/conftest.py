"""One real API server per test module and database kind; tests use their own queues."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.conftest import DATABASE_KINDS
from tests.databases import database_url_for
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with database_url_for(request.param, tmp_path_factory.mktemp("api")) as url, serving(url) as running:
        yield running


@pytest.fixture
def client(server: ApiServer) -> Iterator[ArmadaClient]:
    with ArmadaClient(server.url) as armada:
        yield armada


@pytest.fixture
def queue(client: ArmadaClient) -> str:
    """A fresh queue for this test."""
    name = f"q-{uuid.uuid4().hex[:12]}"
    client.create_queue(Queue(name=name))
    return name
