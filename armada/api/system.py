"""Operational endpoints: liveness/readiness, the version (with the schema's, so that a
rolling upgrade can be followed replica by replica) and who the caller is."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec

import armada
from armada.api.access import identity_of
from armada.api.dependencies import DatabaseDep
from armada.api.problems import problem
from armada.api.responses import problems
from armada.auth.identity import ANONYMOUS
from armada.auth.policy import authenticated, public
from armada.eventstore import migrate
from armada.model.leases import EXECUTOR_PROTOCOL
from armada.model.wire.identity import WhoAmI
from armada.model.wire.version import ServerVersion


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


@get("/v1/version", summary="The server's version and its database's schema", tags=["system"], opt=public())
async def server_version(database: DatabaseDep) -> ServerVersion:
    status = await migrate.status(database.engine)
    return ServerVersion(
        version=armada.__version__,
        schema_revision=status.revision,
        schema_head=status.head,
        executor_protocol=EXECUTOR_PROTOCOL,
    )


@get("/v1/whoami", summary="The caller's name and groups", tags=["system"], opt=authenticated())
async def whoami(request: Request[Any, Any, Any]) -> WhoAmI:
    """The name jobs are owned by: what ``--owner me`` and Lookout's header show."""
    identity = identity_of(request)
    if identity is None:
        return WhoAmI(name=ANONYMOUS)
    return WhoAmI(name=identity.name, groups=sorted(identity.groups))


ROUTES = [health, version, server_version, whoami]
