"""The kubernetes backend's lists and watches as a real API server answers them (issue #21).

A first list at ``resourceVersion=0`` is served from the watch cache, which ignores
``limit``: on a big cluster it arrives as one huge answer. These tests check that lists
really come in pages, that the API server (not the executor) leaves out finished
non-Armada pods, that pods nominated by preemption count on their node, and that objects
the client's models would refuse are handled.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes_asyncio import client

from armada.executor.backends.kube_calls import close_api
from armada.executor.backends.kubernetes import KubernetesBackend, api_client_from
from armada.executor.settings import KubernetesSettings
from tests.integration.executor.conftest import lease
from tests.integration.executor.kube_double import KubeDouble, kube_cluster, node, plain_pod
from tests.integration.executor.recorder import Recorder

#: Only a guard against a hang.
HANG = 60.0
QUIET = {"housekeeping_seconds": 3600, "node_refresh_seconds": 3600}


def list_queries(double: KubeDouble, path: str) -> list[dict[str, list[str]]]:
    """The query of every list (not watch) request to ``path``."""
    found = []
    for line in double.requests:
        method, target = line.split(" ", 1)
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=True)
        if method == "GET" and url.path == path and "watch" not in query:
            found.append(query)
    return found


async def test_a_first_list_bigger_than_a_page_arrives_in_pages() -> None:
    async with kube_cluster() as (double, api):
        core = client.CoreV1Api(api)
        for n in range(5):
            await core.create_node(node(f"node-{n}"))
            await core.create_namespaced_pod("kube-system", plain_pod(f"daemon-{n}", f"node-{n}", "1", "1Gi"))
        for p in range(3):
            labels = {"armada_job_run_id": f"r{p}", "armada_job_id": f"j{p}", "armada_executor_id": "exec-a"}
            await core.create_namespaced_pod(
                "default", plain_pod(f"armada-j{p}-0", "node-0", "1", "1Gi", labels)
            )
        backend = KubernetesBackend(
            KubernetesSettings(list_page_size=2, **QUIET), 300.0, api=api, executor_id="exec-a"
        )
        try:
            found = await backend.discover()
            reports = await backend.nodes()
        finally:
            await backend.close()
    assert sorted(f.run_id for f in found) == ["r0", "r1", "r2"]
    assert {r.name: r.allocated_non_armada for r in reports} == {
        f"node-{n}": {"cpu": "1", "memory": "1Gi", "pods": "1"} for n in range(5)
    }
    nodes = list_queries(double, "/api/v1/nodes")
    other_pods = [q for q in list_queries(double, "/api/v1/pods") if q["labelSelector"][0].startswith("!")]
    armada_pods = [
        q for q in list_queries(double, "/api/v1/pods") if not q["labelSelector"][0].startswith("!")
    ]
    # 5 nodes and 5 other pods: 3 pages of 2 each; 3 Armada pods: 2 pages.
    for pages, count in ((nodes, 3), (other_pods, 3), (armada_pods, 2)):
        assert len(pages) == count
        assert [q["limit"] for q in pages] == [["2"]] * count
        assert "continue" not in pages[0] and all("continue" in q for q in pages[1:])
        assert not any("resourceVersion" in q for q in pages), "a consistent read: rv=0 would ignore limit"


async def other_pods_usage_becomes(backend: KubernetesBackend, expected: dict[str, str]) -> None:
    async with asyncio.timeout(HANG):
        while True:
            if (await backend.nodes())[0].allocated_non_armada == expected:
                return
            await asyncio.sleep(0.01)


async def test_other_pods_count_on_the_node_they_are_bound_or_nominated_to_and_finished_ones_not() -> None:
    async with kube_cluster() as (double, api):
        core = client.CoreV1Api(api)
        await core.create_node(node("node-1"))
        pending = plain_pod("pending", "", "2", "2Gi")
        del pending["spec"]["nodeName"]
        await core.create_namespaced_pod("kube-system", pending)
        await core.create_namespaced_pod("kube-system", plain_pod("done", "node-1", "4", "4Gi"))
        double.set_pod("done", "kube-system", phase="Succeeded")
        backend = KubernetesBackend(KubernetesSettings(**QUIET), 300.0, api=api)
        try:
            (report,) = await backend.nodes()
            assert report.allocated_non_armada == {}
            # kube-scheduler preempted pods on node-1 for it: the room is promised, not Armada's.
            double.nominate("pending", "node-1", "kube-system")
            await other_pods_usage_becomes(backend, {"cpu": "2", "memory": "2Gi", "pods": "1"})
            double.bind("pending", "node-1", "kube-system")  # counted once, not twice
            await core.create_namespaced_pod("kube-system", plain_pod("daemon", "node-1", "1", "1Gi"))
            await other_pods_usage_becomes(backend, {"cpu": "3", "memory": "3Gi", "pods": "2"})
        finally:
            await backend.close()
    (selection,) = {
        q["fieldSelector"][0] for q in list_queries(double, "/api/v1/pods") if "fieldSelector" in q
    }
    assert selection == "status.phase!=Succeeded,status.phase!=Failed"
    assert double.store.get("pods", "kube-system", "done") is not None  # kept out by the selection alone


def kubeconfig_for(host: str, path: Path) -> str:
    """A kubeconfig for the double: the executor's own way to its client."""
    named = {"name": "t"}
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{**named, "cluster": {"server": host}}],
                "users": [{**named, "user": {"token": "abc"}}],
                "contexts": [{**named, "context": {"cluster": "t", "user": "t"}}],
                "current-context": "t",
            }
        )
    )
    return str(path)


async def test_objects_the_client_models_would_refuse_are_still_handled(tmp_path: Path) -> None:
    # A newer API server or kubelet may leave out what this client's models require.
    running = {"name": "main", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
    finished = {"name": "main", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    condition = {"type": "PodReadyToStartContainers"}
    with pytest.raises(ValueError, match="must not be `None`"):
        client.V1ContainerStatus(**running)  # validation on: refused
    with pytest.raises(ValueError, match="must not be `None`"):
        client.V1PodCondition(**condition)
    async with kube_cluster() as (double, test_api):
        new_node = node("node-1")
        new_node["status"]["conditions"].append({"type": "FutureCondition"})
        double.store.put("nodes", new_node)
        settings = KubernetesSettings(
            kubeconfig=kubeconfig_for(test_api.configuration.host, tmp_path / "kube"), **QUIET
        )
        api = await api_client_from(settings)
        assert api.configuration.client_side_validation is False
        backend = KubernetesBackend(settings, 300.0, api=api)
        recorder = Recorder()
        try:
            await backend.discover()
            await backend.start(recorder)
            recorder.held.add("r1")
            await backend.launch(lease("r1", job="j1", node="node-1"))
            double.set_pod(
                "armada-j1-0", phase="Running", conditions=[condition], containerStatuses=[running]
            )
            await recorder.wait_for(lambda: "running" in recorder.kinds("r1"), within=HANG)
            double.set_pod("armada-j1-0", phase="Succeeded", containerStatuses=[finished])
            await recorder.wait_for(lambda: recorder.finished("r1"), within=HANG)
            (report,) = await backend.nodes()
        finally:
            await backend.close()
            await close_api(api)
    assert (recorder.final("r1").kind, recorder.final("r1").exit_code) == ("succeeded", 0)
    assert report.ready
