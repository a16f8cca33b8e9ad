"""Queue methods of ``api.Submit`` and ``api.QueueService``, over :mod:`armada.services.queues`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import msgspec
from armada_client.armada import submit_pb2, submit_pb2_grpc
from google.protobuf import empty_pb2

from armada.api.grpc import status
from armada.api.grpc.auth import Caller
from armada.api.grpc.convert import Context, to_dict, to_proto, wire
from armada.api.services import Services
from armada.auth.identity import Identity
from armada.auth.permissions import GlobalPermission as P
from armada.fleet import bulk_actions
from armada.model.errors import Conflict, InvalidRequest, NotFound
from armada.model.queues import Queue, QueueVerb
from armada.model.wire.queues import QueueFailure
from armada.services import queues
from armada.services.pod_policy import QueueSecurityGate

EMPTY = empty_pb2.Empty()

#: Our queue fields upstream's ``api.Queue`` cannot carry: an update over gRPC keeps them.
_OURS_ONLY = ("allowed_namespaces", "pod_security_profile", "allowed_service_accounts")


def queue_from_proto(message: submit_pb2.Queue, where: str = "") -> Queue:
    data = to_dict(message)
    data.pop("labelsDeprecated", None)  # upstream's deprecated list form; labels replace it
    try:
        return wire(data, Queue)
    except InvalidRequest as exc:  # name the queue of a batch the field belongs to
        raise InvalidRequest(exc.detail, field=f"{where}{exc.field or ''}".rstrip(".") or None) from None


def queue_to_proto(queue: Queue) -> submit_pb2.Queue:
    return to_proto(queue, submit_pb2.Queue)


class QueueMethods:
    """The queue methods both services share; the subclass sets ``services`` and ``caller``."""

    services: Services
    caller: Caller

    def _gate(self, identity: Identity) -> QueueSecurityGate:
        return QueueSecurityGate(
            may_administer=self.caller.may_administer_queue_security(identity),
            reserved_namespaces=self.services.submission_rules.pod_policy.reserved_namespaces,
        )

    @status.unary
    async def CreateQueue(self, request: submit_pb2.Queue, context: Context) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.CREATE_QUEUE)
        queue = queue_from_proto(request)
        try:
            await queues.create_queue(self.services.store, queue, identity.name, self._gate(identity))
        except Conflict as exc:  # upstream answers ALREADY_EXISTS for a queue that exists
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, status.details_of(exc))
        return EMPTY

    @status.unary
    async def CreateQueues(
        self, request: submit_pb2.QueueList, context: Context
    ) -> submit_pb2.BatchQueueCreateResponse:
        identity = await self.caller.requiring(context, P.CREATE_QUEUE)
        given = [queue_from_proto(q, f"queues[{i}].") for i, q in enumerate(request.queues)]
        failed = await queues.create_queues(self.services.store, given, identity.name, self._gate(identity))
        return submit_pb2.BatchQueueCreateResponse(failed_queues=[_failure(f) for f in failed])

    @status.unary
    async def UpdateQueue(self, request: submit_pb2.Queue, context: Context) -> empty_pb2.Empty:
        """``create_queue`` holders or the queue's owners (REST's ``owner_or``); what each may
        change (owners: only labels) is judged by the same checker as REST's."""
        caller = self.caller
        identity = await caller.identify(context)
        queue = await self._keeping_ours(queue_from_proto(request))
        await queues.update_queue(
            self.services.store,
            queue.name,
            queue,
            identity.name,
            self._gate(identity),
            caller.queue_change_checker(identity),
        )
        return EMPTY

    @status.unary
    async def UpdateQueues(
        self, request: submit_pb2.QueueList, context: Context
    ) -> submit_pb2.BatchQueueUpdateResponse:
        caller = self.caller
        identity = await caller.identify(context)  # each queue's change is judged on its own
        given = [queue_from_proto(q, f"queues[{i}].") for i, q in enumerate(request.queues)]
        kept = [await self._keeping_ours(queue, missing_ok=True) for queue in given]
        failed = await queues.update_queues(
            self.services.store,
            kept,
            identity.name,
            self._gate(identity),
            caller.queue_change_checker(identity),
        )
        return submit_pb2.BatchQueueUpdateResponse(
            failed_queues=[
                submit_pb2.QueueUpdateResponse(queue=queue_to_proto(f.queue), error=f.error) for f in failed
            ]
        )

    async def _keeping_ours(self, queue: Queue, *, missing_ok: bool = False) -> Queue:
        try:
            existing = await queues.get_queue(self.services.store, queue.name)
        except NotFound:
            if missing_ok:  # the batch reports it as failed, as REST does
                return queue
            raise
        return msgspec.structs.replace(queue, **{name: getattr(existing, name) for name in _OURS_ONLY})

    @status.unary
    async def DeleteQueue(self, request: submit_pb2.QueueDeleteRequest, context: Context) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.DELETE_QUEUE)
        await queues.delete_queue(self.services.store, request.name, identity.name)
        return EMPTY

    @status.unary
    async def GetQueue(self, request: submit_pb2.QueueGetRequest, context: Context) -> submit_pb2.Queue:
        reads = await self.caller.reads(context)
        return queue_to_proto(reads.shown(await queues.get_queue(self.services.store, request.name)))

    @status.streaming
    async def GetQueues(
        self, request: submit_pb2.StreamingQueueGetRequest, context: Context
    ) -> AsyncIterator[submit_pb2.StreamingQueueMessage]:
        reads = await self.caller.reads(context)
        for queue in await queues.list_queues(self.services.store, request.num or None):
            yield submit_pb2.StreamingQueueMessage(queue=queue_to_proto(reads.shown(queue)))
        yield submit_pb2.StreamingQueueMessage(end=submit_pb2.EndMarker())


def _failure(failure: QueueFailure) -> submit_pb2.QueueCreateResponse:
    return submit_pb2.QueueCreateResponse(queue=queue_to_proto(failure.queue), error=failure.error)


class QueueService(QueueMethods, submit_pb2_grpc.QueueServiceServicer):
    """``api.QueueService``: queue CRUD plus cordon and queue-wide preempt and cancel."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.caller = Caller(services.access, services.store)

    @status.unary
    async def CordonQueue(self, request: submit_pb2.QueueCordonRequest, context: Context) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.CORDON_QUEUE)
        await queues.set_cordoned(self.services.store, request.name, True, identity.name)
        return EMPTY

    @status.unary
    async def UncordonQueue(
        self, request: submit_pb2.QueueUncordonRequest, context: Context
    ) -> empty_pb2.Empty:
        identity = await self.caller.requiring(context, P.CORDON_QUEUE)
        await queues.set_cordoned(self.services.store, request.name, False, identity.name)
        return EMPTY

    @status.unary
    async def PreemptOnQueue(
        self, request: submit_pb2.QueuePreemptRequest, context: Context
    ) -> empty_pb2.Empty:
        identity = await self.caller.on_queue(context, request.name, QueueVerb.PREEMPT)
        await bulk_actions.preempt_on_queue(
            self.services.store,
            request.name,
            priority_classes=list(request.priorityClasses),
            pools=list(request.pools),
            user=identity.name,
            known_classes=self.services.scheduling.priority_classes,
        )
        return EMPTY

    @status.unary
    async def CancelOnQueue(
        self, request: submit_pb2.QueueCancelRequest, context: Context
    ) -> empty_pb2.Empty:
        identity = await self.caller.on_queue(context, request.name, QueueVerb.CANCEL)
        states = [submit_pb2.JobState.Name(state) for state in request.jobStates]
        await bulk_actions.cancel_on_queue(
            self.services.store,
            request.name,
            priority_classes=list(request.priorityClasses),
            pools=list(request.pools),
            states=states,
            user=identity.name,
        )
        return EMPTY
