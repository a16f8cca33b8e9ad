"""``binoculars.Binoculars``: job logs and node cordons over gRPC, answered as
``POST /v1/binoculars/log`` and ``POST /v1/binoculars/cordon`` are (same services, same
permissions)."""

from __future__ import annotations

from typing import Any, Literal

from armada_client.armada import binoculars_pb2, binoculars_pb2_grpc
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf import empty_pb2

from armada.api.grpc import status
from armada.api.grpc.auth import Caller
from armada.api.grpc.convert import Context, wire
from armada.api.services import Services
from armada.auth.permissions import GlobalPermission
from armada.fleet import controls as fleet
from armada.model.wire.logs import LogRequest

#: ``PodLogOptions`` fields that are optional numbers (proto2: unset is not 0).
_OPTIONAL_NUMBERS: tuple[Literal["tailLines", "sinceSeconds", "limitBytes"], ...] = (
    "tailLines",
    "sinceSeconds",
    "limitBytes",
)


def log_request(message: binoculars_pb2.LogRequest) -> LogRequest:
    """The REST body the message stands for, through the same decoder and bounds."""
    options: dict[str, Any] = {}
    if message.HasField("log_options"):
        given: core_v1.PodLogOptions = message.log_options
        options = {
            "container": given.container,
            "previous": given.previous,
            "timestamps": given.timestamps,
            "follow": given.follow,
        }
        options.update({name: getattr(given, name) for name in _OPTIONAL_NUMBERS if given.HasField(name)})
    body = {
        "jobId": message.job_id,
        "podNumber": message.pod_number,
        "podNamespace": message.pod_namespace,
        "sinceTime": message.since_time,
        "logOptions": options,
    }
    return wire(body, LogRequest)


class BinocularsService(binoculars_pb2_grpc.BinocularsServicer):
    def __init__(self, services: Services) -> None:
        self.services = services
        self.caller = Caller(services.access, services.store)

    @status.unary
    async def Logs(self, request: binoculars_pb2.LogRequest, context: Context) -> binoculars_pb2.LogResponse:
        caller = self.caller
        identity = await caller.identify(context)
        reads = caller.access.read_scope(self.services.store, identity)
        answer = await self.services.logs.read(
            reads, log_request(request), caller.stream_key(identity, context)
        )
        return binoculars_pb2.LogResponse(
            log=[binoculars_pb2.LogLine(timestamp=line.timestamp, line=line.line) for line in answer.log]
        )

    @status.unary
    async def Cordon(self, request: binoculars_pb2.CordonRequest, context: Context) -> empty_pb2.Empty:
        """Upstream's message names the node only: it must be one executor's (else
        FAILED_PRECONDITION, as REST's 409 naming ``executor``)."""
        identity = await self.caller.requiring(context, GlobalPermission.CORDON_NODES)
        await fleet.cordon_node(self.services.store, request.node_name, user=identity.name)
        return empty_pb2.Empty()
