"""``api.Event``: a job set's events as upstream's ``EventStreamMessage`` stream.

Message ids are the log's sequence numbers as strings; ``from_message_id`` is exclusive and
``watch`` keeps the stream open (it ends when the server shuts down). Each message carries
one event of the ``events`` oneof, built from our event's fields of the same name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cache
from typing import Any

from armada_client.armada import event_pb2, event_pb2_grpc, health_pb2
from google.protobuf import empty_pb2

from armada.api.grpc import status
from armada.api.grpc.convert import Context, GrpcServices
from armada.api.grpc.jobs_proto import job_to_proto, timestamp
from armada.api.grpc.submit import SERVING
from armada.eventstore.store import StoredEvent
from armada.model import events as ev
from armada.model.errors import InvalidRequest, NotFound
from armada.model.queues import QueueVerb
from armada.model.states import FailureCause
from armada.services import streams
from armada.services.queues import get_queue

_ONEOF = {field.json_name: field for field in event_pb2.EventMessage.DESCRIPTOR.fields}
_ENVELOPE = {"job_id", "job_set_id", "queue", "created"}
_CAUSES = {cause.value: cause.value for cause in FailureCause if cause is not FailureCause.LEASE_EXPIRED}


@cache
def _copied_fields(kind: str) -> tuple[str, ...]:
    """Scalar fields of upstream's message ``kind`` that our event carries by the same name."""
    descriptor = _ONEOF[kind].message_type
    assert descriptor is not None
    return tuple(
        f.name
        for f in descriptor.fields
        if f.name not in _ENVELOPE and f.message_type is None and not f.is_repeated and f.name != "cause"
    )


def event_message(seq: int, event: ev.Event) -> event_pb2.EventStreamMessage | None:
    """Upstream's stream message for one of our events; ``None`` for events it has no form for."""
    field = _ONEOF.get(event.type)
    if field is None:
        return None
    fields: dict[str, Any] = {
        "job_id": event.job_id,
        "job_set_id": event.job_set_id,
        "queue": event.queue,
        "created": timestamp(event.created),
    }
    for name in _copied_fields(event.type):
        value = getattr(event, name, None)
        if value is not None:
            fields[name] = value
    if isinstance(event, ev.JobSubmitted):
        fields["job"] = job_to_proto(event.job)
    elif isinstance(event, ev.JobIngressInfo):
        fields["ingress_addresses"] = event.ingress_addresses
    elif isinstance(event, ev.JobFailed):
        fields["cause"] = event_pb2.Cause.Value(_CAUSES.get(event.cause.value, "Error"))
        if event.exit_code is not None:
            fields["exit_codes"] = {event.pod_name or "main": event.exit_code}
    concrete: Any = field.message_type
    oneof: dict[str, Any] = {field.name: concrete._concrete_class(**fields)}
    return event_pb2.EventStreamMessage(id=str(seq), message=event_pb2.EventMessage(**oneof))


class EventService(event_pb2_grpc.EventServicer):
    def __init__(self, services: GrpcServices) -> None:
        self.services = services

    @status.streaming
    async def GetJobSetEvents(
        self, request: event_pb2.JobSetRequest, context: Context
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        async for message in self._stream(
            context, request.queue, request.id, request.from_message_id, request.watch, request.errorIfMissing
        ):
            yield message

    @status.streaming
    async def Watch(
        self, request: event_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        async for message in self._stream(
            context, request.queue, request.job_set_id, request.from_id, True, False
        ):
            yield message

    async def _stream(
        self, context: Context, queue: str, job_set_id: str, from_id: str, watch: bool, if_missing: bool
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        store = self.services.store
        caller = self.services.caller
        identity = await caller.on_queue(context, queue, QueueVerb.WATCH)
        if not queue or not job_set_id:
            raise InvalidRequest("name the queue and the job set", field="queue" if not queue else "id")
        after = streams.parse_message_id(from_id)
        try:
            await get_queue(store, queue)
        except NotFound:
            raise NotFound(f"queue {queue!r} does not exist", field="queue") from None
        if if_missing:
            await streams.require_job_set(store, queue, job_set_id)
        events = streams.job_set_events(store, queue, job_set_id, after=after, watch=watch)
        key = caller.stream_key(identity, context)
        async for message in self.services.streams.open_for(key, self._messages(events, watch)):
            yield message

    async def _messages(
        self, events: AsyncIterator[StoredEvent], watch: bool
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        shutdown = self.services.shutdown
        try:
            while True:
                # A watching stream waits for new events: it ends as soon as the server stops.
                stored = await (shutdown.unless_stopping(_next(events)) if watch else _next(events))
                if stored is None:
                    return
                message = event_message(stored.seq, stored.event)
                if message is not None:
                    yield message
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    async def Health(self, request: empty_pb2.Empty, context: Context) -> health_pb2.HealthCheckResponse:
        return SERVING


async def _next(events: AsyncIterator[StoredEvent]) -> StoredEvent | None:
    return await anext(events, None)
