"""``GET /metrics``: the Prometheus text exposition of the server's registry."""

from __future__ import annotations

from litestar import Response, get
from litestar.datastructures import State
from prometheus_client import CONTENT_TYPE_LATEST

from armada.auth.permissions import GlobalPermission
from armada.auth.policy import Requires, public_if
from armada.metrics.server import ServerMetrics


@get(
    "/metrics",
    tags=["system"],
    summary="Prometheus metrics",
    include_in_schema=False,
    opt=public_if("public_metrics", Requires(GlobalPermission.VIEW_REPORTS)),
)
async def metrics(state: State) -> Response[bytes]:
    registry: ServerMetrics = state.metrics
    return Response(registry.exposition(), media_type=CONTENT_TYPE_LATEST)


ROUTES = [metrics]
