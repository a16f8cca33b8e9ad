"""The standard ``grpc.health.v1.Health`` service of a real ``armada serve``, through the
real health stub: SERVING for the server and each api service, NOT_SERVING once SIGTERM
starts a graceful stop."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from armada.api.grpc.server import SERVED
from tests.e2e.grpc_servers import serve_with_grpc

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _check(stub: health_pb2_grpc.HealthStub, service: str) -> int:
    request = health_pb2.HealthCheckRequest(service=service)
    response: health_pb2.HealthCheckResponse = stub.Check(request, timeout=5)
    return response.status


def test_health_serving_then_not_serving_on_sigterm(tmp_path: Path) -> None:
    process, _, grpc_port = serve_with_grpc(
        tmp_path, f"sqlite:///{tmp_path / 'armada.db'}", env={"ARMADA_SERVER_SHUTDOWN_TIMEOUT": "2"}
    )
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        grpc.channel_ready_future(channel).result(timeout=60)
        stub = health_pb2_grpc.HealthStub(channel)  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + 60
        while True:  # the port opens a moment before the statuses are set
            try:
                if _check(stub, "") == SERVING:
                    break
            except grpc.RpcError:
                pass
            assert time.monotonic() < deadline, process.log()
            time.sleep(0.1)
        assert SERVED == (
            "api.QueueService",
            "api.RetryPolicyService",
            "api.Submit",
            "api.Event",
            "api.Jobs",
            "binoculars.Binoculars",
        )
        assert {name: _check(stub, name) for name in SERVED} == dict.fromkeys(SERVED, SERVING)
        with pytest.raises(grpc.RpcError) as unknown:
            _check(stub, "api.Executor")  # not served: the standard answer
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]

        watch = stub.Watch(health_pb2.HealthCheckRequest(service="api.Event"), timeout=30)
        assert next(watch).status == SERVING
        process.signal(signal.SIGTERM)
        assert next(watch).status == NOT_SERVING  # while the server is still draining
        assert process.wait(30) == 0
    finally:
        process.stop()
