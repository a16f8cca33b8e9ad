"""``/v1/executor/*``: the lease protocol between the server and its executors.

Both calls name the executor they act for (``executorId``); the credential must hold
``execute_jobs`` and name that id (``auth.tokens[].executors``), so that one cluster's
token cannot take or report on another cluster's runs.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, post
from litestar.datastructures import State
from litestar.params import JSONBody

from armada.api.access import require_executor
from armada.auth.policy import as_executor
from armada.model.leases import EventsAccepted, LeaseRequest, LeaseResponse, RunEventBatch
from armada.services.leases import LeaseService
from armada.services.run_events import RunEventIntake

AnyRequest = Request[Any, Any, Any]


@post(
    "/v1/executor/lease",
    status_code=200,
    tags=["executor"],
    summary="Heartbeat, node report and leases",
    opt=as_executor(body="executorId"),
)
async def lease(data: JSONBody[LeaseRequest], state: State, request: AnyRequest) -> LeaseResponse:
    require_executor(request, data.executor_id)
    service: LeaseService = state.leases
    return await service.lease(data)


@post(
    "/v1/executor/events",
    status_code=200,
    tags=["executor"],
    summary="Report run events (idempotent)",
    opt=as_executor(body="executorId"),
)
async def events(data: JSONBody[RunEventBatch], state: State, request: AnyRequest) -> EventsAccepted:
    require_executor(request, data.executor_id)
    intake: RunEventIntake = state.run_events
    await intake.report(data)
    return EventsAccepted()


ROUTES = [lease, events]
