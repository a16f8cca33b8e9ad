"""Queue endpoints: CRUD, batched create/update/list, cordon, active queues.

Every caller may see that a queue exists and how it is scheduled (submitters need that);
its owners and permissions are shown only to callers who may read the queue, and active
queues are listed only for them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import msgspec
from litestar import Request, delete, get, post, put
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import Stream

from armada.api.access import identity_of
from armada.api.dependencies import QueueGate, Reads, Scheduling, Store, User
from armada.api.ndjson import NDJSON, ndjson
from armada.api.responses import ndjson_stream, problems
from armada.api.services import services_of
from armada.auth.identity import ANONYMOUS_IDENTITY
from armada.auth.permissions import GlobalPermission as P
from armada.auth.policy import authenticated, on_queue, owner_or, requires, watching
from armada.auth.queue_changes import check_queue_change
from armada.fleet import bulk_actions
from armada.fleet import controls as fleet
from armada.model.numbers import MAX_COUNT
from armada.model.queues import Queue, QueueVerb
from armada.model.wire.base import Empty
from armada.model.wire.jobs import CancellationResult, JobPreemptResponse
from armada.model.wire.queries import ActiveQueuesRequest
from armada.model.wire.queues import (
    ActiveQueues,
    ActiveQueuesResponse,
    BatchQueueResponse,
    QueueCancelRequest,
    QueueList,
    QueuePreemptRequest,
    StreamingQueue,
    StreamingQueueLine,
    StreamingQueueMessage,
)
from armada.services import queries, queues
from armada.services.queues import Authorize

TAGS = ["queues"]


@post(
    "/v1/queue",
    responses=problems(409),
    status_code=200,
    tags=TAGS,
    summary="Create a queue",
    opt=requires(P.CREATE_QUEUE),
)
async def create_queue(data: JSONBody[Queue], store: Store, user: User, queue_gate: QueueGate) -> Empty:
    await queues.create_queue(store, data, user, queue_gate)
    return Empty()


def _change_checker(request: Request[Any, Any, Any]) -> Authorize:
    """The caller's rights over queue definitions (see :mod:`armada.auth.queue_changes`)."""
    access = services_of(request.app.state).access
    identity = identity_of(request) or ANONYMOUS_IDENTITY

    def check(old: Queue, new: Queue) -> None:
        check_queue_change(old, new, identity, access.permissions)

    return check


@put(
    "/v1/queue/{name:str}",
    responses=problems(403, 404),
    tags=TAGS,
    summary="Replace a queue's definition (owners may change only labels; see docs/security.md)",
    opt=owner_or(P.CREATE_QUEUE, path="name"),
)
async def update_queue(
    name: FromPath[str],
    data: JSONBody[Queue],
    store: Store,
    user: User,
    queue_gate: QueueGate,
    request: Request[Any, Any, Any],
) -> Empty:
    await queues.update_queue(store, name, data, user, queue_gate, _change_checker(request))
    return Empty()


@delete(
    "/v1/queue/{name:str}",
    responses=problems(404, 409),
    status_code=200,
    tags=TAGS,
    summary="Delete a queue without unfinished jobs",
    opt=requires(P.DELETE_QUEUE),
)
async def delete_queue(name: FromPath[str], store: Store, user: User) -> Empty:
    await queues.delete_queue(store, name, user)
    return Empty()


@get("/v1/queue/{name:str}", responses=problems(404), tags=TAGS, summary="Get a queue", opt=watching())
async def get_queue(name: FromPath[str], store: Store, reads: Reads) -> Queue:
    return reads.shown(await queues.get_queue(store, name))


@post(
    "/v1/queue/{name:str}/cordon",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Refuse new jobs, stop scheduling",
    opt=requires(P.CORDON_QUEUE),
)
async def cordon_queue(name: FromPath[str], store: Store, user: User) -> Empty:
    await queues.set_cordoned(store, name, True, user)
    return Empty()


@post(
    "/v1/queue/{name:str}/uncordon",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Accept and schedule jobs again",
    opt=requires(P.CORDON_QUEUE),
)
async def uncordon_queue(name: FromPath[str], store: Store, user: User) -> Empty:
    await queues.set_cordoned(store, name, False, user)
    return Empty()


@post(
    "/v1/queue/{name:str}/preempt",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Preempt the queue's running jobs of preemptible classes (filters: classes, pools)",
    opt=on_queue(QueueVerb.PREEMPT, path="name"),
)
async def preempt_on_queue(
    name: FromPath[str],
    store: Store,
    user: User,
    scheduling: Scheduling,
    data: JSONBody[QueuePreemptRequest | None] = None,
) -> JobPreemptResponse:
    request = data or QueuePreemptRequest()
    fleet.check_name(name, request.name)
    preempted = await bulk_actions.preempt_on_queue(
        store,
        name,
        priority_classes=request.priority_classes,
        pools=request.pools,
        user=user,
        known_classes=scheduling.priority_classes,
    )
    return JobPreemptResponse(preempted_ids=preempted)


@post(
    "/v1/queue/{name:str}/cancel",
    responses=problems(404),
    status_code=200,
    tags=TAGS,
    summary="Cancel the queue's jobs (filters: classes, pools, states)",
    opt=on_queue(QueueVerb.CANCEL, path="name"),
)
async def cancel_on_queue(
    name: FromPath[str], store: Store, user: User, data: JSONBody[QueueCancelRequest | None] = None
) -> CancellationResult:
    request = data or QueueCancelRequest()
    fleet.check_name(name, request.name)
    cancelled = await bulk_actions.cancel_on_queue(
        store,
        name,
        priority_classes=request.priority_classes,
        pools=request.pools,
        states=request.job_states,
        user=user,
    )
    return CancellationResult(cancelled_ids=cancelled)


@get(
    "/v1/batched/queues",
    media_type=NDJSON,
    responses=ndjson_stream(StreamingQueueLine, "One line per queue, then an end marker"),
    tags=TAGS,
    summary="Every queue, one NDJSON line each, then an end marker",
    opt=watching(),
)
async def list_queues(
    store: Store, reads: Reads, num: Annotated[int | None, QueryParameter(ge=0, le=MAX_COUNT)] = None
) -> Stream:
    found = [reads.shown(queue) for queue in await queues.list_queues(store, num)]

    async def lines() -> AsyncIterator[bytes]:
        for queue in [*found, None]:
            line = StreamingQueue(queue=queue) if queue else StreamingQueue(end={})
            yield msgspec.json.encode(StreamingQueueLine(result=StreamingQueueMessage(Event=line))) + b"\n"

    return ndjson(lines())


@post(
    "/v1/batched/create_queues",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Create several queues",
    opt=requires(P.CREATE_QUEUE),
)
async def create_queues(
    data: JSONBody[QueueList], store: Store, user: User, queue_gate: QueueGate
) -> BatchQueueResponse:
    return BatchQueueResponse(failed_queues=await queues.create_queues(store, data.queues, user, queue_gate))


@put(
    "/v1/batched/update_queues",
    responses=problems(),
    tags=TAGS,
    summary="Update several queues (each as PUT /v1/queue/{name}; refusals are failedQueues)",
    opt=authenticated(),
)
async def update_queues(
    data: JSONBody[QueueList],
    store: Store,
    user: User,
    queue_gate: QueueGate,
    request: Request[Any, Any, Any],
) -> BatchQueueResponse:
    failed = await queues.update_queues(store, data.queues, user, queue_gate, _change_checker(request))
    return BatchQueueResponse(failed_queues=failed)


@post(
    "/v1/queues/active",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Queues with unfinished jobs, by pool",
    opt=watching(),
)
async def active_queues(
    store: Store, reads: Reads, data: JSONBody[ActiveQueuesRequest | None] = None
) -> ActiveQueuesResponse:
    by_pool = await queries.active_queues(store)
    readable = await reads.readable({name for names in by_pool.values() for name in names})
    shown = {pool: [name for name in names if name in readable] for pool, names in by_pool.items()}
    return ActiveQueuesResponse(
        active_queues_by_pool={pool: ActiveQueues(queues=names) for pool, names in shown.items() if names}
    )


ROUTES = [
    create_queue,
    update_queue,
    delete_queue,
    get_queue,
    cordon_queue,
    uncordon_queue,
    preempt_on_queue,
    cancel_on_queue,
    list_queues,
    create_queues,
    update_queues,
    active_queues,
]
