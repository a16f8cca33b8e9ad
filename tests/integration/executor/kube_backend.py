"""The kubernetes backend against the API double, as the fault tests use it: a ``cluster``
fixture (double, real client, started backend, recorder) and what those tests wait for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client

from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.settings import KubernetesSettings
from tests.integration.executor.conftest import lease
from tests.integration.executor.kube_double import KubeDouble, kube_cluster
from tests.integration.executor.recorder import Recorder

#: Only a guard against a hang (the behaviour under test never waits this long).
HANG = 60.0
POD = "armada-j1-0"


@dataclass
class Cluster:
    double: KubeDouble
    api: client.ApiClient
    backend: KubernetesBackend
    recorder: Recorder

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    async def launch(self, run: str = "r1", job: str = "j1", **fields: Any) -> None:
        self.recorder.held.add(run)
        async with asyncio.timeout(HANG):
            await self.backend.launch(lease(run, job=job, node=fields.pop("node", "node-1"), **fields))


FAST = {
    "housekeeping_seconds": 3600,
    "node_refresh_seconds": 3600,
    "request_timeout_seconds": 0.5,
    "retry_initial_seconds": 0.01,
    "retry_max_seconds": 0.05,
    "terminating_deadline_seconds": 0.2,
    "pod_kill_grace_seconds": 1,
}


@pytest.fixture
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    overrides = getattr(request, "param", {})
    async with kube_cluster() as (double, api):
        settings = KubernetesSettings(**{**FAST, **overrides})
        backend = KubernetesBackend(settings, 300.0, api=api, executor_id="exec-a")
        recorder = Recorder()
        await backend.discover()
        await backend.start(recorder)
        try:
            yield Cluster(double, api, backend, recorder)
        finally:
            await backend.close()


def only_pending(cluster: Cluster, run: str) -> bool:
    """The run was reported pending (maybe more than once: the tracker drops repeats), nothing else."""
    return set(cluster.recorder.kinds(run)) == {"pending"} and run not in cluster.recorder.gone_runs


async def fresh_nodes(cluster: Cluster) -> list[Any]:
    """The node report of a new backend (the fixture's was taken before the test made nodes)."""
    backend = KubernetesBackend(KubernetesSettings(**FAST), 0.0, api=cluster.api)
    try:
        return await backend.nodes()
    finally:
        await backend.close()


async def usage_becomes(cluster: Cluster, node_name: str, expected: dict[str, str]) -> None:
    """Wait until the backend's informers report ``expected`` non-Armada usage on the node."""
    async with asyncio.timeout(HANG):
        while True:
            reports = {n.name: n.allocated_non_armada for n in await cluster.backend.nodes()}
            if reports.get(node_name) == expected:
                return
            await asyncio.sleep(0.01)


async def final(cluster: Cluster, run: str = "r1") -> Any:
    await cluster.recorder.wait_for(lambda: cluster.recorder.finished(run), within=HANG)
    return cluster.recorder.final(run)
