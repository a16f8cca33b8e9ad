"""``armada serve`` with gRPC in a subprocess (the example users, a free port each), and clients
of upstream's ``armada-client`` that send credentials as armadactl does."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, TypeVar, cast

import grpc
import yaml
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

from tests.processes import ROOT, ArmadaProcess, Serve, Server, free_port

AUTH = str(ROOT / "examples" / "config" / "auth-basic.yaml")

MAX_REQUEST_BYTES = 1024 * 1024

#: The dev server's one node offers this much CPU: a job asking for all of it stays QUEUED
#: while another job runs (and is not rejected: it fits the node when empty).
NODE_CPU = "2"

C = TypeVar("C")


def public_methods(kind: type) -> set[str]:
    """Every public method of an armada-client class, helpers that make no call included."""
    return {name for name in dir(kind) if not name.startswith("_") and callable(getattr(kind, name))}


class _Recorded:
    """A client whose public method calls are noted in ``called``."""

    def __init__(self, client: object, called: set[str]) -> None:
        self._client, self._called = client, called

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._client, name)
        if name.startswith("_") or not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self._called.add(name)
            return value(*args, **kwargs)

        return call


def recorded(client: C, called: set[str]) -> C:
    """``client``, noting each public method called in ``called``: a test that ends with
    ``assert called == public_methods(...)`` calls every client method, and a method a
    new armada-client adds fails it until a test calls it too."""
    return cast(C, _Recorded(client, called))


def metadata_channel(address: str, authorization: str) -> grpc.Channel:
    """An insecure channel that sends ``authorization`` (how armadactl sends credentials)."""
    interceptor = _HeaderInterceptor(authorization)
    return grpc.intercept_channel(grpc.insecure_channel(address), interceptor)


class _HeaderInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    def __init__(self, authorization: str) -> None:
        self.authorization = authorization

    def _details(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [*(details.metadata or []), ("authorization", self.authorization)]
        return _Details(details.method, details.timeout, metadata, details.credentials)

    def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return continuation(self._details(details), request)


class _Details(grpc.ClientCallDetails):
    def __init__(self, method, timeout, metadata, credentials):  # type: ignore[no-untyped-def]
        self.method, self.timeout, self.metadata, self.credentials = method, timeout, metadata, credentials
        self.wait_for_ready = None
        self.compression = None


def grpc_client(server: Server, user: str, called: set[str] | None = None) -> ArmadaClient:
    """An upstream client of ``server``'s gRPC as an example user (recording into ``called``)."""
    client = ArmadaClient(metadata_channel(server.grpc_address, basic(user)))
    return client if called is None else recorded(client, called)


def basic(user: str) -> str:
    """The ``Authorization`` value of an example user (``<user>``/``<user>-pass``)."""
    return "Basic " + base64.b64encode(f"{user}:{user}-pass".encode()).decode()


def serve_with_grpc(
    workdir: Path,
    database_url: str,
    *args: str,
    config: str | None = AUTH,
    env: dict[str, str] | None = None,
    program: Path | None = None,
) -> tuple[ArmadaProcess, int, int]:
    """``armada serve`` (this work tree's, or an installed ``program``) with the example users
    (or another ``config``, or none) and gRPC on a free port: the process, the REST port and
    the gRPC port."""
    port, grpc_port = free_port(), free_port()
    command = ["serve", "--port", str(port), "--grpc-port", str(grpc_port), "--database-url", database_url]
    if config is not None:
        command += ["--config", config]
    process = ArmadaProcess(
        [*command, *args], cwd=workdir, log_path=workdir / f"serve-{port}.log", env=env, program=program
    )
    return process, port, grpc_port


#: ``armada serve --dev`` with the example users and gRPC: jobs run as local processes on one
#: node of :data:`NODE_CPU`.
GRPC_DEV = Serve(
    args=("--dev",),
    env={
        "ARMADA_EXECUTOR_PROCESS": json.dumps({"cpu": NODE_CPU}),
        "ARMADA_SERVER_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
    },
    config=yaml.safe_load(Path(AUTH).read_text()),
    grpc=True,
)


def pod(*args: str, cpu: str = "100m") -> core_v1.PodSpec:
    quantity = {"cpu": resource.Quantity(string=cpu), "memory": resource.Quantity(string="64Mi")}
    return core_v1.PodSpec(
        containers=[
            core_v1.Container(
                name="main",
                image="alpine",
                args=list(args),
                resources=core_v1.ResourceRequirements(requests=quantity, limits=quantity),
            )
        ],
        restartPolicy="Never",
    )
