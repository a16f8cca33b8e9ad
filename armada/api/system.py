"""Operational endpoints: liveness/readiness and the version."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec

import armada
from armada.api.dependencies import DatabaseDep
from armada.api.problems import problem
from armada.api.responses import problems
from armada.auth.policy import public


class VersionInfo(msgspec.Struct):
    version: str


@get(
    "/health",
    summary="204 when the database answers, 503 otherwise",
    tags=["system"],
    responses={204: ResponseSpec(None, description="The database answers"), **problems(503)},
    opt=public(),
)
async def health(database: DatabaseDep) -> Response[Any]:
    try:
        await database.ping()
    except Exception as exc:  # any failure to reach the database means "not ready"
        return problem(503, "Service unavailable", f"database unavailable: {type(exc).__name__}")
    return Response(content=None, status_code=204)


@get("/version", summary="The server's version", tags=["system"], opt=public())
async def version() -> VersionInfo:
    return VersionInfo(version=armada.__version__)


ROUTES = [health, version]
