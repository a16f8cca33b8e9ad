"""One real API server per test module and database kind; tests use their own queues."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import DATABASE_KINDS
from tests.databases import database_url_for
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with database_url_for(request.param, tmp_path_factory.mktemp("api")) as url, serving(url) as running:
        yield running
