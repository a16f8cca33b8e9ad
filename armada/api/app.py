"""The Litestar application: routes, guards, error handling and OpenAPI, around the server's
lifespan (:mod:`armada.api.lifespan`: the database, the services and the background work)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from litestar import Litestar, Router
from litestar.config.cors import CORSConfig
from litestar.openapi import OpenAPIConfig

import armada
from armada.api import (
    executor_routes,
    fleet_routes,
    forecast_routes,
    job_routes,
    log_routes,
    lookout_routes,
    lookout_view_routes,
    metrics_routes,
    query_routes,
    queue_routes,
    report_routes,
    retry_routes,
    sign_in_routes,
    system,
    usage_routes,
)
from armada.api.access import AccessControl, enforce_access
from armada.api.browser_safety import BrowserSafety
from armada.api.dependencies import DEPENDENCIES
from armada.api.lifespan import Companion, server_lifespan
from armada.api.problems import EXCEPTION_HANDLERS
from armada.auth.bind_address import metrics_public
from armada.auth.permissions import GlobalPermission
from armada.auth.policy import Authenticated, public_if
from armada.auth.settings import StaticToken
from armada.eventstore.database import Database
from armada.metrics.server import ServerMetrics
from armada.settings import Settings


def access_control(settings: Settings, internal: StaticToken | None = None) -> AccessControl:
    """Authentication and permissions; an ``internal`` token (the dev executor's) may lease.
    ``auth.publicMetrics`` left unset is decided here, from the address the server binds."""
    auth = msgspec.structs.replace(
        settings.auth, public_metrics=metrics_public(settings.auth, settings.server.host)
    )
    if internal is None:
        return AccessControl(auth)
    return AccessControl(
        auth,
        extra_tokens=[internal],
        extra_grants={GlobalPermission.EXECUTE_JOBS: list(internal.groups)},
    )


def create_app(
    settings: Settings, *, internal: StaticToken | None = None, companions: Sequence[Companion] = ()
) -> Litestar:
    """The server's app; ``companions`` run beside it, calling it with the ``internal`` token."""
    database = Database(settings.database.url, pool_size=settings.database.pool_size)
    metrics = ServerMetrics()
    lifespan = server_lifespan(settings, database, access_control(settings, internal), metrics, companions)
    return Litestar(
        route_handlers=[
            *system.ROUTES,
            *queue_routes.ROUTES,
            *retry_routes.ROUTES,
            *job_routes.ROUTES,
            *forecast_routes.ROUTES,
            *usage_routes.ROUTES,
            *query_routes.ROUTES,
            *executor_routes.ROUTES,
            *log_routes.ROUTES,
            *fleet_routes.ROUTES,
            *report_routes.ROUTES,
            *metrics_routes.ROUTES,
            *lookout_routes.ROUTES,
            *lookout_view_routes.ROUTES,
            *sign_in_routes.ROUTES,
        ],
        middleware=[metrics.http, BrowserSafety(settings.server.cors_allow_origins)],
        dependencies=DEPENDENCIES,
        cors_config=CORSConfig(allow_origins=settings.server.cors_allow_origins)
        if settings.server.cors_allow_origins
        else None,
        lifespan=[lifespan],
        exception_handlers=EXCEPTION_HANDLERS,
        before_request=enforce_access,  # the URL, the caller, the policy, the body
        request_max_body_size=settings.server.max_request_bytes,
        openapi_config=OpenAPIConfig(
            title="Armada",
            version=armada.__version__,
            path="/schema",
            openapi_router=Router(
                "/schema",
                route_handlers=[],
                include_in_schema=False,
                opt=public_if("public_schema", Authenticated()),
            ),
        ),
        logging_config=None,
        debug=False,
    )
