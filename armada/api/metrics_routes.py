"""``GET /metrics``: the Prometheus text exposition of the server's registry."""

from __future__ import annotations

from typing import Annotated

from litestar import Response, get
from litestar.params import QueryParameter
from prometheus_client import CONTENT_TYPE_LATEST

from armada.api.dependencies import Metrics
from armada.auth.permissions import GlobalPermission
from armada.auth.policy import Requires, public_if


@get(
    "/metrics",
    tags=["system"],
    summary="Prometheus metrics",
    include_in_schema=False,
    opt=public_if("public_metrics", Requires(GlobalPermission.VIEW_REPORTS)),
)
async def metrics(
    metrics: Metrics, names: Annotated[list[str] | None, QueryParameter(name="name[]")] = None
) -> Response[bytes]:
    """Every series, or (``?name[]=...``, repeatable, as Prometheus federation asks) only those named."""
    # As a header: Litestar would append its own "; charset=utf-8" to a text/ media type,
    # which prometheus_client's already ends with.
    return Response(await metrics.exposition(names or ()), headers={"content-type": CONTENT_TYPE_LATEST})


ROUTES = [metrics]
