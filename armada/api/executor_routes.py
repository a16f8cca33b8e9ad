"""``/v1/executor/*``: the lease protocol between the server and its executors."""

from __future__ import annotations

from litestar import post
from litestar.datastructures import State
from litestar.params import JSONBody

from armada.auth.permissions import GlobalPermission
from armada.auth.policy import requires
from armada.model.leases import EventsAccepted, LeaseRequest, LeaseResponse, RunEventBatch
from armada.services.leases import LeaseService
from armada.services.run_events import RunEventIntake


@post(
    "/v1/executor/lease",
    status_code=200,
    tags=["executor"],
    summary="Heartbeat, node report and leases",
    opt=requires(GlobalPermission.EXECUTE_JOBS),
)
async def lease(data: JSONBody[LeaseRequest], state: State) -> LeaseResponse:
    service: LeaseService = state.leases
    return await service.lease(data)


@post(
    "/v1/executor/events",
    status_code=200,
    tags=["executor"],
    summary="Report run events (idempotent)",
    opt=requires(GlobalPermission.EXECUTE_JOBS),
)
async def events(data: JSONBody[RunEventBatch], state: State) -> EventsAccepted:
    intake: RunEventIntake = state.run_events
    await intake.report(data)
    return EventsAccepted()


ROUTES = [lease, events]
