"""``/v1/executor/*``: the lease protocol between the server and its executors (and the
executors' answers to the log requests their lease calls carried).

Both calls name the executor they act for (``executorId``); the credential must hold
``execute_jobs`` and name that id (``auth.tokens[].executors``), so that one cluster's
token cannot take or report on another cluster's runs.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, post
from litestar.params import JSONBody

from armada.api.access import require_executor
from armada.api.dependencies import Leases, Logs, RunEvents
from armada.auth.policy import as_executor
from armada.model.errors import NotFound
from armada.model.leases import EventsAccepted, LeaseRequest, LeaseResponse, LogAnswer, RunEventBatch

AnyRequest = Request[Any, Any, Any]


@post(
    "/v1/executor/lease",
    status_code=200,
    tags=["executor"],
    summary="Heartbeat, node report and leases",
    opt=as_executor(body="executorId"),
)
async def lease(data: JSONBody[LeaseRequest], leases: Leases, request: AnyRequest) -> LeaseResponse:
    require_executor(request, data.executor_id)
    return await leases.lease(data)


@post(
    "/v1/executor/events",
    status_code=200,
    tags=["executor"],
    summary="Report run events (idempotent)",
    opt=as_executor(body="executorId"),
)
async def events(data: JSONBody[RunEventBatch], run_events: RunEvents, request: AnyRequest) -> EventsAccepted:
    require_executor(request, data.executor_id)
    await run_events.report(data)
    return EventsAccepted()


@post(
    "/v1/executor/logs",
    status_code=200,
    tags=["executor"],
    summary="Answer a log request the lease call handed out",
    opt=as_executor(body="executorId"),
)
async def log_answer(data: JSONBody[LogAnswer], logs: Logs, request: AnyRequest) -> EventsAccepted:
    require_executor(request, data.executor_id)
    if not await logs.mailbox.answer(data, logs.clock()):
        raise NotFound(
            f"no log request {data.request_id} of executor {data.executor_id} waits (it timed out)",
            field="requestId",
        )
    return EventsAccepted()


ROUTES = [lease, events, log_answer]
