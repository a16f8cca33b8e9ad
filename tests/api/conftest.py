"""One real API server per test module and database kind; tests use their own queues.

A module that needs other settings overrides the ``settings`` fixture; one that runs on SQLite
only marks itself with ``tests.servers.SQLITE_ONLY``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from armada.settings import Settings
from tests.conftest import DATABASE_KINDS
from tests.databases import database_url_for
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module")
def settings() -> Settings:
    """The settings of the module's server (``serving`` adds the test executor's token)."""
    return Settings()


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, settings: Settings
) -> Iterator[ApiServer]:
    with (
        database_url_for(request.param, tmp_path_factory.mktemp("api")) as url,
        serving(url, settings) as running,
    ):
        yield running
