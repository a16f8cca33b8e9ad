"""A node's ``pods`` capacity, end to end: a real server, a real kubernetes executor, and the
Kubernetes API double (in a thread of its own, since the test itself blocks on HTTP)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes_asyncio import client

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.e2e.cluster import FAST_SERVER_ENV, executor, job, wait_for
from tests.integration.executor.kube_double import kube_cluster, node, plain_pod, write_kubeconfig
from tests.processes import running_server

T = TypeVar("T")


class ThreadedDouble:
    """The API double served from its own event loop, so blocking test code cannot stall it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready: Future[client.ApiClient] = Future()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),))
        self._thread.start()
        self.api = self._ready.result(timeout=30)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with kube_cluster() as (_, api):
            self._ready.set_result(api)
            await self._stop.wait()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=30)

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)
        self._loop.close()


@pytest.fixture
def double() -> Iterator[ThreadedDouble]:
    threaded = ThreadedDouble()
    try:
        yield threaded
    finally:
        threaded.close()


def test_a_node_never_gets_more_runs_than_its_pods_capacity(tmp_path: Path, double: ThreadedDouble) -> None:
    core = client.CoreV1Api(double.api)
    small = node("node-1")
    small["status"]["allocatable"]["pods"] = "3"
    double.run(core.create_node(small))
    priority_class = {"metadata": {"name": "armada-default"}, "value": 1000, "preemptionPolicy": "Never"}
    double.run(client.SchedulingV1Api(double.api).create_priority_class(priority_class))
    double.run(core.create_namespaced_pod("kube-system", plain_pod("daemon", "node-1", "100m", "64Mi")))

    async def armada_pods() -> list[str]:
        listed = await core.list_pod_for_all_namespaces(label_selector="armada_job_run_id")
        return [pod.metadata.name for pod in listed.items]

    with (
        running_server(tmp_path, env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as armada,
        executor(
            tmp_path,
            server.url,
            "kube",
            backend="kubernetes",
            args=(
                "--kubeconfig",
                str(write_kubeconfig(tmp_path / "kubeconfig", double.api.configuration.host)),
            ),
        ),
    ):
        armada.create_queue(Queue(name="q"))
        ids = armada.submit_jobs("q", "set", [job("sleep 600", cpu="100m") for _ in range(4)])
        # 3 pods on the node, one of them not Armada's: two runs fit, the others wait.
        wait_for(lambda: len(double.run(armada_pods())) == 2, what="two pods created")
        states = sorted(armada.job_status(ids).values())
        assert states.count("QUEUED") == 2, states
        double.run(core.delete_namespaced_pod("daemon", "kube-system", grace_period_seconds=0))
        wait_for(lambda: len(double.run(armada_pods())) == 3, what="a third pod once the daemon left")
        assert sorted(armada.job_status(ids).values()).count("QUEUED") == 1
