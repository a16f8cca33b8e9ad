"""The gRPC server: upstream's services on ``server.grpcPort``, in the REST app's process and
event loop, started and stopped by the app's lifespan.

With ``--workers N`` every worker binds the same port (``SO_REUSEPORT``) and the kernel
spreads connections over them; a single server does not set it, so that a port already
taken fails loudly instead of being shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog
from armada_client.armada import (
    binoculars_pb2,
    binoculars_pb2_grpc,
    event_pb2,
    job_pb2,
    job_pb2_grpc,
    submit_pb2,
    submit_pb2_grpc,
)

from armada.api.grpc.binoculars import BinocularsService
from armada.api.grpc.events import EventService
from armada.api.grpc.events import add_to_server as add_event_service
from armada.api.grpc.health import Health
from armada.api.grpc.jobs import JobsService
from armada.api.grpc.queues import QueueService
from armada.api.grpc.retry_policies import RetryPolicyService
from armada.api.grpc.submit import SubmitService
from armada.api.services import Services
from armada.api.settings import ServerSettings

log = structlog.get_logger(__name__)

#: The api services served, by full name, as the health service reports them.
SERVED = tuple(
    service.full_name
    for module in (submit_pb2, event_pb2, job_pb2, binoculars_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
)


def _address(settings: ServerSettings) -> str:
    host = settings.host or "0.0.0.0"
    return f"[{host}]:{settings.grpc_port}" if ":" in host else f"{host}:{settings.grpc_port}"


@dataclass(frozen=True)
class GrpcServer:
    server: grpc.aio.Server
    health: Health


async def start_grpc(settings: ServerSettings, services: Services) -> GrpcServer:
    """Bind and start; raises if the port cannot be bound."""
    limit = settings.max_request_bytes
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", -1),
            ("grpc.so_reuseport", 1 if settings.workers > 1 else 0),
        ]
    )
    submit_pb2_grpc.add_SubmitServicer_to_server(SubmitService(services), server)  # type: ignore[no-untyped-call]
    submit_pb2_grpc.add_QueueServiceServicer_to_server(QueueService(services), server)  # type: ignore[no-untyped-call]
    add_event_service(EventService(services), server)
    job_pb2_grpc.add_JobsServicer_to_server(JobsService(services), server)  # type: ignore[no-untyped-call]
    submit_pb2_grpc.add_RetryPolicyServiceServicer_to_server(RetryPolicyService(services), server)  # type: ignore[no-untyped-call]
    binoculars_pb2_grpc.add_BinocularsServicer_to_server(BinocularsService(services), server)  # type: ignore[no-untyped-call]
    health = Health(server, services.shutdown)
    address = _address(settings)
    try:
        if settings.tls_cert:
            port = server.add_secure_port(address, _credentials(settings))
        else:
            port = server.add_insecure_port(address)
    except RuntimeError:
        port = 0
    if port == 0:
        raise OSError(
            f"cannot listen for gRPC on {address} (in use?): choose another with --grpc-port "
            "(server.grpcPort), or 0 to turn gRPC off"
        )
    await server.start()
    await health.serve(SERVED)
    log.info("gRPC listening", address=address, tls=bool(settings.tls_cert))
    return GrpcServer(server, health)


def _credentials(settings: ServerSettings) -> grpc.ServerCredentials:
    """The HTTPS certificate and key serve gRPC too (read once, at start)."""
    key, cert = Path(settings.tls_key).read_bytes(), Path(settings.tls_cert).read_bytes()
    return grpc.ssl_server_credentials([(key, cert)])


async def stop_grpc(running: GrpcServer, grace: float) -> None:
    """Report not serving, refuse new calls, let running ones finish for ``grace`` seconds,
    then cancel them (a health ``Watch`` is one of those: it has said ``NOT_SERVING``)."""
    await running.health.stop()
    await running.server.stop(grace)
