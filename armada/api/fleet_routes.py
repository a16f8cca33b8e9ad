"""Fleet controls at upstream's paths: executor settings (cordon), preempt and cancel on an
executor or a node, node cordon (upstream's Binoculars path), forgetting a vanished
executor, and the executor list.

Upstream's permissions guard them: ``update_executor_settings``, ``cordon_nodes``,
``preempt_any_jobs`` and ``cancel_any_jobs`` (these act across queues, so no queue grant
is enough).
"""

from __future__ import annotations

from typing import Literal

from litestar import delete, get, post, put
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, JSONBody

from armada.api.dependencies import Scheduler, Scheduling, Store, User
from armada.api.responses import problems
from armada.auth.permissions import GlobalPermission as P
from armada.auth.policy import authenticated, requires
from armada.eventstore.store import EventStore
from armada.fleet import bulk_actions
from armada.fleet import controls as fleet
from armada.model.wire.base import Empty
from armada.model.wire.fleet import (
    ExecutorJobsRequest,
    ExecutorList,
    ExecutorSettingsUpsertRequest,
    NodeCordonRequest,
    NodeJobsRequest,
)
from armada.model.wire.jobs import CancellationResult, JobPreemptResponse
from armada.scheduling.config import SchedulingConfig

TAGS = ["executors"]


@put(
    "/v1/executor_settings/{name:str}",
    responses=problems(),
    tags=TAGS,
    summary="Cordon (no new leases; running jobs go on) or uncordon an executor",
    opt=requires(P.UPDATE_EXECUTOR_SETTINGS),
)
async def upsert_executor_settings(
    name: FromPath[str], data: JSONBody[ExecutorSettingsUpsertRequest], store: Store, user: User
) -> Empty:
    await fleet.upsert_executor_settings(store, name, data, user)
    return Empty()


@delete(
    "/v1/executor_settings/{name:str}",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Forget an executor's settings (it is uncordoned)",
    opt=requires(P.UPDATE_EXECUTOR_SETTINGS),
)
async def delete_executor_settings(name: FromPath[str], store: Store, user: User) -> Empty:
    await fleet.delete_executor_settings(store, name, user)
    return Empty()


Verb = Literal["preempt", "cancel"]

_PERMISSIONS = {"preempt": P.PREEMPT_ANY_JOBS, "cancel": P.CANCEL_ANY_JOBS}


def _bulk_route(verb: Verb, target: Literal["executor", "node"], summary: str) -> HTTPRouteHandler:
    """``POST /v1/{target}/{verb}/{name}``, guarded by the verb's permission: the route of each
    bulk command (the handlers differ only in their body and answer types)."""
    return post(
        f"/v1/{target}/{verb}/{{name:str}}",
        responses=problems(404),
        status_code=200,
        tags=TAGS,
        summary=summary,
        opt=requires(_PERMISSIONS[verb]),
    )


async def _on_executor(
    verb: Verb,
    name: str,
    request: ExecutorJobsRequest | NodeJobsRequest | None,
    store: EventStore,
    user: str,
    scheduling: SchedulingConfig,
) -> list[str]:
    """The bulk command on executor ``name``, or on node ``name`` of ``request.executor``."""
    request = request or ExecutorJobsRequest()
    fleet.check_name(name, request.name)
    executor, node = (request.executor, name) if isinstance(request, NodeJobsRequest) else (name, "")
    return await bulk_actions.on_executor(
        store,
        verb,
        executor,
        node=node,
        queues=request.queues,
        priority_classes=request.priority_classes,
        user=user,
        known_classes=scheduling.priority_classes,
    )


@_bulk_route(
    "preempt", "executor", "Preempt the preemptible jobs running on an executor (filters: queues, classes)"
)
async def preempt_on_executor(
    name: FromPath[str],
    store: Store,
    user: User,
    scheduling: Scheduling,
    data: JSONBody[ExecutorJobsRequest | None] = None,
) -> JobPreemptResponse:
    return JobPreemptResponse(
        preempted_ids=await _on_executor("preempt", name, data, store, user, scheduling)
    )


@_bulk_route("cancel", "executor", "Cancel the jobs running on an executor (filters: queues, classes)")
async def cancel_on_executor(
    name: FromPath[str],
    store: Store,
    user: User,
    scheduling: Scheduling,
    data: JSONBody[ExecutorJobsRequest | None] = None,
) -> CancellationResult:
    return CancellationResult(cancelled_ids=await _on_executor("cancel", name, data, store, user, scheduling))


@_bulk_route("preempt", "node", "Preempt the preemptible jobs running on one node of an executor")
async def preempt_on_node(
    name: FromPath[str], data: JSONBody[NodeJobsRequest], store: Store, user: User, scheduling: Scheduling
) -> JobPreemptResponse:
    return JobPreemptResponse(
        preempted_ids=await _on_executor("preempt", name, data, store, user, scheduling)
    )


@_bulk_route("cancel", "node", "Cancel the jobs running on one node of an executor")
async def cancel_on_node(
    name: FromPath[str], data: JSONBody[NodeJobsRequest], store: Store, user: User, scheduling: Scheduling
) -> CancellationResult:
    return CancellationResult(cancelled_ids=await _on_executor("cancel", name, data, store, user, scheduling))


def _cordon_route(cordoned: bool, summary: str) -> HTTPRouteHandler:
    """``POST /v1/binoculars/cordon`` or ``.../uncordon`` (one handler, the flag apart)."""
    verb = "cordon" if cordoned else "uncordon"

    async def handler(data: JSONBody[NodeCordonRequest], store: Store, user: User) -> Empty:
        await fleet.cordon_node(
            store, data.node_name, executor=data.executor, cordoned=cordoned, reason=data.reason, user=user
        )
        return Empty()

    handler.__name__ = handler.__qualname__ = f"{verb}_node"  # names the OpenAPI operation
    route = post(
        f"/v1/binoculars/{verb}",
        responses=problems(404, 409),
        status_code=200,
        tags=TAGS,
        summary=summary,
        opt=requires(P.CORDON_NODES),
    )
    return route(handler)


cordon_node = _cordon_route(
    True, "Cordon a node: nothing new is placed there, its executor cordons it in the cluster"
)
uncordon_node = _cordon_route(False, "Uncordon a node cordoned with /v1/binoculars/cordon")


@delete(
    "/v1/executor/{name:str}",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Forget a vanished executor and its nodes; its runs are handled as lost (requeued)",
    opt=requires(P.UPDATE_EXECUTOR_SETTINGS),
)
async def forget_executor(name: FromPath[str], store: Store, user: User, scheduler: Scheduler) -> Empty:
    await fleet.forget_executor(store, scheduler, name, user)
    return Empty()


@get(
    "/v1/executors",
    tags=TAGS,
    summary="Every executor: pool, last seen, cordon and reason, nodes and their running jobs",
    opt=authenticated(),
)
async def list_executors(store: Store) -> ExecutorList:
    return await fleet.list_executors(store)


ROUTES = [
    upsert_executor_settings,
    delete_executor_settings,
    preempt_on_executor,
    cancel_on_executor,
    preempt_on_node,
    cancel_on_node,
    cordon_node,
    uncordon_node,
    forget_executor,
    list_executors,
]
