"""The Litestar application: routes, error handling, and the server's lifespan.

The lifespan opens the database (migrating it) before the first request and closes it
on shutdown; later components (scheduler, in-process executor) hang off the same hook.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.openapi import OpenAPIConfig

import armada
from armada.api import job_routes, query_routes, queue_routes, system
from armada.api.dependencies import DEPENDENCIES
from armada.api.problems import EXCEPTION_HANDLERS
from armada.eventstore.database import Database
from armada.services.validation import SubmissionRules
from armada.settings import Settings


def create_app(settings: Settings) -> Litestar:
    database = Database(settings.database.url, pool_size=settings.database.pool_size)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        await database.open()
        app.state.database = database
        app.state.scheduling = settings.scheduling
        app.state.submission_rules = SubmissionRules.from_settings(settings)
        try:
            yield
        finally:
            await database.close()

    return Litestar(
        route_handlers=[*system.ROUTES, *queue_routes.ROUTES, *job_routes.ROUTES, *query_routes.ROUTES],
        dependencies=DEPENDENCIES,
        lifespan=[lifespan],
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=settings.server.max_request_bytes,
        openapi_config=OpenAPIConfig(title="Armada", version=armada.__version__, path="/schema"),
        logging_config=None,
        debug=False,
    )
