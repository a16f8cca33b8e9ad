"""One real API server per test module and database kind; tests use their own queues.

A module that needs other settings overrides the ``settings`` fixture; one that runs on SQLite
only marks itself with ``tests.databases.SQLITE_ONLY``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from armada.settings import Settings
from tests.databases import database_url_for
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module")
def settings() -> Settings:
    """The settings of the module's server (``serving`` adds the test executor's token)."""
    return Settings()


@pytest.fixture(scope="module")
def server(
    database_kind: str, tmp_path_factory: pytest.TempPathFactory, settings: Settings
) -> Iterator[ApiServer]:
    """(Overrides the process server of ``tests/conftest.py``.)"""
    with (
        database_url_for(database_kind, tmp_path_factory.mktemp("api")) as url,
        serving(url, settings) as running,
    ):
        yield running
