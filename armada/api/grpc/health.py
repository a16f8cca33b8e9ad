"""The standard ``grpc.health.v1.Health`` service (grpcio-health-checking), for load balancers,
Kubernetes gRPC probes and ``grpc_health_probe``.

It answers ``SERVING`` for ``""`` (the server) and for each api service it hosts, and turns
every one to ``NOT_SERVING`` as soon as the server starts stopping (SIGTERM), while the
port still answers, so that balancers drain it before it refuses calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from armada.api.shutdown import ShutdownSignal

SERVING = health_pb2.HealthCheckResponse.SERVING


class Health:
    """The health servicer and the task that drains it when the server stops."""

    def __init__(self, server: grpc.aio.Server, shutdown: ShutdownSignal) -> None:
        self.servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, server)
        self._shutdown = shutdown
        self._drain: asyncio.Task[None] | None = None

    async def serve(self, services: Iterable[str]) -> None:
        """Report ``services`` (full names, e.g. ``api.Submit``) and the server as serving."""
        for name in ("", *services):
            await self.servicer.set(name, SERVING)
        self._drain = asyncio.create_task(self._not_serving_once_stopping())

    async def _not_serving_once_stopping(self) -> None:
        await self._shutdown.wait()
        await self.servicer.enter_graceful_shutdown()

    async def stop(self) -> None:
        """Everything ``NOT_SERVING`` (also when stopped without a signal, e.g. in tests)."""
        if self._drain is not None:
            self._drain.cancel()  # waits only for the signal: nothing to clean up
        await self.servicer.enter_graceful_shutdown()
