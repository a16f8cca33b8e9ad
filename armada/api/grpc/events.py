"""``api.Event``: a job set's events as upstream's ``EventStreamMessage`` stream.

Message ids are the log's sequence numbers as strings; ``from_message_id`` is exclusive and
``watch`` keeps the stream open (it ends when the server shuts down, or with
PERMISSION_DENIED once the caller may no longer watch the queue). Each message carries
one event of the ``events`` oneof, built from our event's fields of the same name.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from functools import cache, partial
from typing import Any

import grpc
from armada_client.armada import event_pb2, event_pb2_grpc, health_pb2
from google.protobuf import empty_pb2
from google.protobuf.message_factory import GetMessageClass

from armada.api.grpc import protowire, status
from armada.api.grpc.auth import Caller
from armada.api.grpc.convert import Context
from armada.api.grpc.jobs_proto import job_to_bytes, timestamp_field
from armada.api.grpc.stored import decode_for_stream
from armada.api.grpc.submit import SERVING
from armada.api.services import Services
from armada.eventstore.store import StoredEvent
from armada.model import events as ev
from armada.model.errors import InvalidRequest
from armada.model.lifecycle import FailureCause
from armada.model.queues import QueueVerb
from armada.services import streams

_ONEOF = {field.json_name: field for field in event_pb2.EventMessage.DESCRIPTOR.fields}
_ENVELOPE = {"job_id", "job_set_id", "queue", "created"}
_ID = event_pb2.EventStreamMessage.DESCRIPTOR.fields_by_name["id"].number
_MESSAGE = event_pb2.EventStreamMessage.DESCRIPTOR.fields_by_name["message"].number
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


@cache
def _numbers(kind: str) -> tuple[int, int, int, int, int, int]:
    """Field numbers: ``kind`` in the oneof, then its ``job_id``, ``job_set_id``, ``queue``,
    ``created`` and (``submitted`` only, else 0) ``job``."""
    field = _ONEOF[kind]
    assert field.message_type is not None
    fields = field.message_type.fields_by_name
    job = fields["job"].number if "job" in fields else 0
    envelope = (fields[name].number for name in ("job_id", "job_set_id", "queue", "created"))
    return (field.number, *envelope, job)  # type: ignore[return-value]


def encode_message(seq: int, event: ev.Event) -> bytes | None:
    """Upstream's ``EventStreamMessage`` for one of our events, serialized; ``None`` for
    events it has no form for.

    Composed from serialized parts: the envelope by hand, the kind's own fields (if any is
    set) through protobuf, a ``submitted`` event's job with its cached pod spec spliced in;
    a stream sends these bytes as they are."""
    field = _ONEOF.get(event.type)
    if field is None:
        return None
    kind, job_id, job_set_id, queue, created, job = _numbers(event.type)
    own: dict[str, Any] = {}
    for name in _copied_fields(event.type):
        value = getattr(event, name, None)
        if value:  # proto3 leaves default values out anyway
            own[name] = value
    inner = (
        protowire.string(job_id, event.job_id)
        + protowire.string(job_set_id, event.job_set_id)
        + protowire.string(queue, event.queue)
        + timestamp_field(created, event.created)
    )
    if isinstance(event, ev.JobSubmitted):
        inner += protowire.field(job, job_to_bytes(event.job))
    elif isinstance(event, ev.JobIngressInfo):
        own["ingress_addresses"] = event.ingress_addresses
    elif isinstance(event, ev.JobFailed):
        own["cause"] = event_pb2.Cause.Value(_CAUSES.get(event.cause.value, "Error"))
        if event.exit_code is not None:
            own["exit_codes"] = {event.pod_name or "main": event.exit_code}
    if own:
        concrete: Any = field.message_type
        inner += concrete._concrete_class(**own).SerializeToString()
    return protowire.field(_ID, str(seq).encode()) + protowire.field(_MESSAGE, protowire.field(kind, inner))


class EventService(event_pb2_grpc.EventServicer):
    """Streams send pre-serialized ``EventStreamMessage`` bytes (see :func:`add_to_server`)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.caller = Caller(services.access, services.store)

    @status.streaming
    async def GetJobSetEvents(
        self, request: event_pb2.JobSetRequest, context: Context
    ) -> AsyncIterator[bytes]:
        pages = self._pages(
            context, request.queue, request.id, request.from_message_id, request.watch, request.errorIfMissing
        )
        async for page in pages:
            for message in page:
                yield message

    @status.streaming
    async def Watch(self, request: event_pb2.WatchRequest, context: Context) -> AsyncIterator[bytes]:
        async for page in self._pages(
            context, request.queue, request.job_set_id, request.from_id, True, False
        ):
            for message in page:
                yield message

    async def _pages(
        self, context: Context, queue: str, job_set_id: str, from_id: str, watch: bool, if_missing: bool
    ) -> AsyncIterator[list[bytes]]:
        store = self.services.store
        caller = self.caller
        identity = await caller.on_queue(context, queue, QueueVerb.WATCH)
        if not queue or not job_set_id:
            raise InvalidRequest("name the queue and the job set", field="queue" if not queue else "id")
        after = streams.parse_message_id(from_id)
        await streams.check_target(store, queue, job_set_id, error_if_missing=if_missing)
        # Re-checked before each page: a stream outlives a withdrawn ``watch`` otherwise.
        allowed = partial(caller.access.may_on_queue, store, identity, queue, QueueVerb.WATCH)
        pages = streams.job_set_pages(
            store, queue, job_set_id, after=after, watch=watch, decode=decode_for_stream, allowed=allowed
        )
        key = caller.stream_key(identity, context)
        async for page in self.services.streams.open_for(key, self._encoded(pages, watch)):
            yield page

    async def _encoded(
        self, pages: AsyncGenerator[list[StoredEvent], None], watch: bool
    ) -> AsyncIterator[list[bytes]]:
        """Each page's messages, serialized; one await per page, not per message."""
        shutdown = self.services.shutdown
        try:
            while True:
                # A watching stream waits for new events: it ends as soon as the server stops.
                page = await (shutdown.unless_stopping(_next(pages)) if watch else _next(pages))
                if page is None:
                    return
                messages = [encode_message(stored.seq, stored.event) for stored in page]
                yield [message for message in messages if message is not None]
        finally:
            await pages.aclose()

    async def Health(self, request: empty_pb2.Empty, context: Context) -> health_pb2.HealthCheckResponse:
        return SERVING


async def _next(pages: AsyncIterator[list[StoredEvent]]) -> list[StoredEvent] | None:
    return await anext(pages, None)


def _identity(message: bytes) -> bytes:
    return message


def add_to_server(servicer: EventService, server: grpc.aio.Server) -> None:
    """``api.Event`` as the generated ``add_EventServicer_to_server`` registers it, except that
    the streams' messages are already serialized: the server writes their bytes unchanged."""
    service = event_pb2.DESCRIPTOR.services_by_name["Event"]
    handlers = {}
    for method in service.methods:
        request, response = GetMessageClass(method.input_type), GetMessageClass(method.output_type)
        if method.server_streaming:
            handler = grpc.unary_stream_rpc_method_handler(
                getattr(servicer, method.name), request.FromString, _identity
            )
        else:
            handler = grpc.unary_unary_rpc_method_handler(
                getattr(servicer, method.name), request.FromString, response.SerializeToString
            )
        handlers[method.name] = handler
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)
