"""``GET /v1/usage``: resource-seconds, lost work and waits per group (docs/accounting.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from litestar import get
from litestar.params import Parameter

from armada.api.dependencies import Reads, Store
from armada.api.responses import problems
from armada.auth.policy import watching
from armada.model.wire.usage import UsageResponse
from armada.services.usage import UsageQuery, usage_report

_Text = Annotated[str, Parameter(max_length=256)]


@get(
    "/v1/usage",
    responses=problems(),
    tags=["usage"],
    summary="Resource-seconds used and lost, shares and waits per day, queue, owner, pool or "
    "priority class (queues the caller may watch)",
    opt=watching(),
)
async def usage(
    store: Store, reads: Reads, since: _Text = "", until: _Text = "", by: _Text = "", resource: _Text = ""
) -> UsageResponse:
    query = UsageQuery(since, until, by, resource, datetime.now(UTC).date())
    return await usage_report(store, reads, query)


ROUTES = [usage]
