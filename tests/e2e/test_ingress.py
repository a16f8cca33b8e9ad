"""A job that serves: ``python -m http.server`` with a NodePort service, submitted with
upstream's own client over gRPC to ``armada serve --dev`` (local processes), is reachable at
the address its ``ingressInfo`` event gives, on the gRPC and the REST event streams and in
its run's details; a port no container declares is refused as INVALID_ARGUMENT."""

from __future__ import annotations

import json
import sys
import time

import grpc
import httpx
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from tests.databases import POSTGRES_ONLY
from tests.e2e.grpc_servers import GRPC_DEV, grpc_client, pod
from tests.processes import Serve, Server, free_port

pytestmark = POSTGRES_ONLY


@pytest.fixture(scope="module")
def serve() -> Serve:
    return GRPC_DEV


def serving(port: int) -> submit_pb2.JobSubmitRequestItem:
    spec = pod()
    container = spec.containers[0]
    container.command.extend([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"])
    container.ports.add(name="http", containerPort=port)
    service = submit_pb2.ServiceConfig(type=submit_pb2.ServiceType.NodePort, ports=[port])
    return ArmadaClient.create_job_request_item(None, pod_spec=spec, namespace="default", services=[service])  # type: ignore[arg-type]


def ingress_info(client: ArmadaClient, queue: str, job_set: str, timeout: float = 60) -> dict[int, str]:
    deadline = time.monotonic() + timeout
    for message in client.get_job_events_stream(queue, job_set):
        kind = message.message.WhichOneof("events")
        assert kind not in ("failed", "succeeded", "cancelled"), message
        if kind == "ingress_info":
            return dict(message.message.ingress_info.ingress_addresses)
        assert time.monotonic() < deadline
    raise AssertionError("the stream ended without ingressInfo")


def fetch(url: str, timeout: float = 30) -> httpx.Response:
    """The server's answer once it listens (the event comes when the process starts)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=5)
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"nothing listens at {url}"
            time.sleep(0.2)


def test_a_served_port_is_reachable_at_its_ingress_address(server: Server) -> None:
    admin = grpc_client(server, "admin")
    admin.create_queue(admin.create_queue_request("web", 1.0))
    port = free_port()

    bad = serving(port)
    bad.services[0].ports[:] = [port + 1]  # no container declares it
    with pytest.raises(grpc.RpcError) as refused:
        admin.submit_jobs("web", "bad", [bad])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "jobRequestItems[0].services[0].ports[0]" in refused.value.details()  # type: ignore[attr-defined]

    job_id = admin.submit_jobs("web", "serve", [serving(port)]).job_response_items[0].job_id
    try:
        addresses = ingress_info(admin, "web", "serve")
        assert addresses == {port: f"127.0.0.1:{port}"}
        response = fetch(f"http://{addresses[port]}/")
        assert response.status_code == 200 and "Directory listing" in response.text

        with httpx.Client(base_url=server.url, auth=("admin", "admin-pass"), timeout=30) as http:
            details = http.post("/v1/job/details", json={"jobIds": [job_id], "expandJobRun": True}).json()
            [run] = details["jobDetails"][job_id]["jobRuns"]
            assert run["ingressAddresses"] == {str(port): f"127.0.0.1:{port}"}
            runs = http.post("/v1/run/details", json={"runIds": [run["runId"]]}).json()
            assert runs["jobRunDetails"][run["runId"]]["ingressAddresses"] == {str(port): f"127.0.0.1:{port}"}
            stream = http.post("/v1/job-set/web/serve", json={"watch": False})
            kinds = [next(iter(json.loads(line)["result"]["message"])) for line in stream.text.splitlines()]
            assert kinds.count("ingressInfo") == 1
    finally:
        admin.cancel_jobs(queue="web", job_set_id="serve", job_id=job_id)
    stops_serving(f"http://127.0.0.1:{port}/")  # else the process outlives the module's server


def stops_serving(url: str, timeout: float = 30) -> None:
    """Wait until nothing listens at ``url`` (a cancelled job's process has ended)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=5)
        except httpx.TransportError:
            return
        assert time.monotonic() < deadline, f"{url} still answers after the job was cancelled"
        time.sleep(0.2)
