"""A job leased and running on an API test server, and an executor answering its log requests."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx
import msgspec

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.api.jobs import item, start
from tests.servers import EXECUTOR_HEADERS, ApiServer


class Running(msgspec.Struct):
    queue: str
    job_id: str
    run_id: str


def run_a_job(server: ApiServer, executor_calls: ApiServer) -> Running:
    queue = f"q-{uuid.uuid4().hex[:12]}"
    with ArmadaClient(server.url) as client:
        client.create_queue(Queue(name=queue))
        [job_id] = client.submit_jobs(queue, "set", [item()])
    run_id = start(server, queue, "set", job_id)
    lease_call(executor_calls, {run_id: "running"}, wait_millis=0)
    return Running(queue, job_id, run_id)


def lease_call(server: ApiServer, runs: dict[str, str], wait_millis: int) -> dict[str, Any]:
    nodes = [{"name": "node-1", "allocatable": {"cpu": "8", "memory": "8Gi"}}]
    body = {"executorId": "cluster-1", "pool": "gpu", "nodes": nodes, "runs": runs, "waitMillis": wait_millis}
    response = httpx.post(f"{server.url}/v1/executor/lease", json=body, headers=EXECUTOR_HEADERS, timeout=30)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def answer(server: ApiServer, body: dict[str, Any]) -> httpx.Response:
    body = {"executorId": "cluster-1", **body}
    return httpx.post(f"{server.url}/v1/executor/logs", json=body, headers=EXECUTOR_HEADERS, timeout=30)


class Executor(threading.Thread):
    """One long-poll lease call (10 s: longer than the log wait), then the given answer."""

    def __init__(self, server: ApiServer, run_id: str, reply: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.server, self.run_id, self.reply = server, run_id, reply
        self.orders: list[dict[str, Any]] = []
        self.polling = threading.Event()

    def run(self) -> None:
        self.polling.set()
        self.orders = lease_call(self.server, {self.run_id: "running"}, wait_millis=10_000).get(
            "logRequests", []
        )
        for order in self.orders:
            assert answer(self.server, {"requestId": order["requestId"], **self.reply}).status_code == 200
