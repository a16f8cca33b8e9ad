"""The kubernetes backend: the real kubernetes-asyncio client against an emulated API server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio import client

from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.categories import ErrorCategoriesSettings
from armada.executor.settings import KubernetesSettings
from armada.model.leases import Lease
from tests.integration.executor.conftest import RunningExecutor, lease
from tests.integration.executor.contract_server import ContractServer
from tests.integration.executor.kube_double import kube_api, node, plain_pod, write_kubeconfig
from tests.integration.executor.recorder import Recorder

Setup = tuple[KubernetesBackend, Recorder, client.CoreV1Api]


def settings(**overrides: Any) -> KubernetesSettings:
    return KubernetesSettings(**{"housekeeping_seconds": 3600, "node_refresh_seconds": 3600, **overrides})


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    async with kube_api() as api:
        yield api


async def started(api: client.ApiClient, retention: float = 300.0, **overrides: Any) -> Setup:
    backend = KubernetesBackend(settings(**overrides), retention, api=api)
    recorder = Recorder()
    await backend.discover()
    await backend.start(recorder)
    return backend, recorder, client.CoreV1Api(api)


@pytest.fixture
async def setup(api: client.ApiClient) -> AsyncIterator[Setup]:
    backend, recorder, core = await started(api)
    yield backend, recorder, core
    await backend.close()


async def launch(setup: Setup, leased: Lease) -> None:
    backend, recorder, _ = setup
    recorder.held.add(leased.run_id)
    await backend.launch(leased)


def container(state: dict[str, Any]) -> list[dict[str, Any]]:
    """A complete container status list (the client validates required fields)."""
    return [{"name": "main", "image": "x", "imageID": "", "ready": False, "restartCount": 0, "state": state}]


async def set_status(core: client.CoreV1Api, name: str, status: dict[str, Any]) -> None:
    await core.patch_namespaced_pod_status(name, "default", {"status": status})


async def test_launch_creates_the_pinned_pod(setup: Setup) -> None:
    _, recorder, core = setup
    await launch(setup, lease("r1", job="j1", node="node-1", gang_id="g", gang_cardinality=2))
    pod = await core.read_namespaced_pod("armada-j1-0", "default")
    assert pod.metadata.labels == {"armada_job_id": "j1", "armada_job_run_id": "r1", "armada_queue_id": "q"}
    pin = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert pin.node_selector_terms[0].match_fields[0].values == ["node-1"]
    assert pod.metadata.annotations == {"armada_jobset_id": "set", "armada_owner": "alice"}
    assert pod.spec.restart_policy == "Never"
    env = {e.name: e.value for e in pod.spec.containers[0].env}
    assert env == {
        "ARMADA_JOB_ID": "j1",
        "ARMADA_QUEUE": "q",
        "ARMADA_JOB_SET_ID": "set",
        "ARMADA_GANG_ID": "g",
        "ARMADA_GANG_CARDINALITY": "2",
    }
    assert recorder.kinds("r1")[0] == "pending"


async def test_retried_lease_keeps_the_one_pod(setup: Setup) -> None:
    _, recorder, core = setup
    await launch(setup, lease("r1", job="j1"))
    await launch(setup, lease("r1", job="j1"))
    pods = await core.list_namespaced_pod("default")
    assert [p.metadata.name for p in pods.items] == ["armada-j1-0"]
    assert not recorder.finished("r1")


async def test_pod_phases_become_run_events(setup: Setup) -> None:
    _, recorder, core = setup
    await launch(setup, lease("r1", job="j1"))
    await set_status(core, "armada-j1-0", {"phase": "Running"})
    await recorder.wait_for(lambda: "running" in recorder.kinds("r1"))
    terminated = {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    await set_status(core, "armada-j1-0", {"phase": "Failed", "containerStatuses": container(terminated)})
    await recorder.wait_for(lambda: recorder.finished("r1"))
    final = recorder.final("r1")
    assert (final.kind, final.exit_code, final.cause) == ("failed", 137, "OOM")


async def test_deadline_exceeded_and_success(setup: Setup) -> None:
    _, recorder, core = setup
    await launch(setup, lease("r1", job="j1"))
    await launch(setup, lease("r2", job="j2"))
    await set_status(
        core, "armada-j1-0", {"phase": "Failed", "reason": "DeadlineExceeded", "message": "too slow"}
    )
    await set_status(core, "armada-j2-0", {"phase": "Succeeded"})
    await recorder.wait_for(lambda: recorder.finished("r1", "r2"))
    assert recorder.final("r1").cause == "DeadlineExceeded"
    assert (recorder.final("r2").kind, recorder.final("r2").exit_code) == ("succeeded", 0)


async def test_kill_deletes_the_pod_and_confirms_it_gone(setup: Setup) -> None:
    backend, recorder, core = setup
    await launch(setup, lease("r1", job="j1"))
    await backend.kill("r1")
    assert "r1" in recorder.gone_runs
    assert (await core.list_namespaced_pod("default")).items == []


async def test_new_run_of_a_job_replaces_the_old_runs_pod(setup: Setup) -> None:
    backend, recorder, core = setup
    await launch(setup, lease("r1", job="j1"))
    await set_status(core, "armada-j1-0", {"phase": "Failed"})
    await recorder.wait_for(lambda: recorder.finished("r1"))
    recorder.held.discard("r1")
    await backend.release("r1")
    await launch(setup, lease("r2", job="j1"))
    pod = await core.read_namespaced_pod("armada-j1-0", "default")
    assert pod.metadata.labels["armada_job_run_id"] == "r2"


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (
            {"containerStatuses": container({"waiting": {"reason": "InvalidImageName"}})},
            "failed",
        ),
        ({"containerStatuses": container({"waiting": {"reason": "ImagePullBackOff"}})}, "leaseReturned"),
        (
            {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
            "leaseReturned",
        ),
    ],
)
async def test_stuck_pods_are_settled_and_deleted(
    api: client.ApiClient, status: dict[str, Any], kind: str
) -> None:
    deadlines = {
        "unschedulable_deadline_seconds": 0,
        "image_pull_deadline_seconds": 0,
        "pending_deadline_seconds": 1e9,
    }
    backend, recorder, core = await started(api, housekeeping_seconds=0.05, **deadlines)
    try:
        await launch((backend, recorder, core), lease("r1", job="j1"))
        await set_status(core, "armada-j1-0", {"phase": "Pending", **status})
        await recorder.wait_for(lambda: recorder.finished("r1"))
        assert recorder.final("r1").kind == kind
        await recorder.wait_for(lambda: "r1" in recorder.gone_runs)
        assert (await core.list_namespaced_pod("default")).items == []
    finally:
        await backend.close()


async def test_finished_pods_are_deleted_after_retention(api: client.ApiClient) -> None:
    backend, recorder, core = await started(api, retention=0)
    try:
        await launch((backend, recorder, core), lease("r1", job="j1"))
        await set_status(core, "armada-j1-0", {"phase": "Succeeded"})
        await recorder.wait_for(lambda: recorder.finished("r1"))
        recorder.held.discard("r1")
        await backend.release("r1")
        assert (await core.list_namespaced_pod("default")).items == []
    finally:
        await backend.close()


async def test_node_report_subtracts_non_armada_pods(setup: Setup, api: client.ApiClient) -> None:
    _, _, core = setup
    await core.create_node(node("node-1"))
    await core.create_node(
        node(
            "node-2",
            unschedulable=True,
            ready=False,
            taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        )
    )
    await core.create_namespaced_pod("kube-system", plain_pod("daemon", "node-1", "500m", "1Gi"))
    await core.create_namespaced_pod("kube-system", plain_pod("other", "node-1", "1", "1Gi"))
    armada = plain_pod("armada-x-0", "node-1", "4", "8Gi", labels={"armada_job_run_id": "rx"})
    await core.create_namespaced_pod("kube-system", armada)
    backend = KubernetesBackend(settings(), 300.0, api=api)
    one, two = sorted(await backend.nodes(), key=lambda n: n.name)
    await backend.close()
    assert one.allocatable == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert one.allocated_non_armada == {"cpu": "1500m", "memory": "2Gi", "pods": "2"}
    assert (one.ready, one.unschedulable, one.taints) == (True, False, [])
    assert (two.ready, two.unschedulable, [t.key for t in two.taints]) == (False, True, ["gpu"])


async def test_pods_left_by_an_earlier_executor_are_found(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    labels = {"armada_job_run_id": "old", "armada_job_id": "j0"}
    pod = plain_pod("armada-j0-0", "n", "1", "1Gi", labels)
    pod["metadata"]["namespace"] = "default"
    await core.create_namespaced_pod("default", pod)
    backend = KubernetesBackend(settings(), 300.0, api=api)
    found = await backend.discover()
    assert [(f.run_id, f.job_id, f.phase) for f in found] == [("old", "j0", "running")]


async def test_agent_runs_and_cancels_pods_end_to_end(
    api: client.ApiClient, server: ContractServer, executor: RunningExecutor
) -> None:
    core = client.CoreV1Api(api)
    await core.create_node(node("node-1"))
    backend = KubernetesBackend(settings(), 0.0, api=api)
    server.offer(lease("r1", job="j1", node="node-1"), lease("r2", job="j2", node="node-1"))
    async with executor(cluster=backend, backend="kubernetes", finished_run_retention_seconds=0):
        await server.wait_for(lambda: "pending" in server.kinds("r1") and "pending" in server.kinds("r2"))
        await set_status(core, "armada-j1-0", {"phase": "Running"})
        await server.wait_for(lambda: "running" in server.kinds("r1"))
        await set_status(core, "armada-j1-0", {"phase": "Succeeded"})
        server.cancel.add("r2")
        await server.wait_for(lambda: len(server.lease_requests) > 3 and not server.reported())
    assert server.kinds("r1") == ["pending", "running", "succeeded"]
    assert server.kinds("r2") == ["pending"]
    assert (await core.list_namespaced_pod("default")).items == []
    assert [n.name for n in server.lease_requests[0].nodes] == ["node-1"]


def held_cordoned(server: ContractServer) -> list[str] | None:
    """What the executor's last lease call says it holds cordoned (``None``: no call yet)."""
    return server.lease_requests[-1].cordoned_nodes if server.lease_requests else None


async def test_the_agent_cordons_and_uncordons_nodes_on_the_servers_order(
    api: client.ApiClient, server: ContractServer, executor: RunningExecutor
) -> None:
    core = client.CoreV1Api(api)
    await core.create_node(node("node-1"))
    await core.create_node(node("node-2"))
    backend = KubernetesBackend(settings(), 0.0, api=api)
    server.cordons = {"node-1": "ECC errors"}
    async with executor(cluster=backend, backend="kubernetes"):
        await server.wait_for(lambda: held_cordoned(server) == ["node-1"])
        cordoned = await core.read_node("node-1")
        assert cordoned.spec.unschedulable is True
        assert cordoned.metadata.annotations == {"armadaproject.io/cordon-reason": "ECC errors"}
        assert not (await core.read_node("node-2")).spec.unschedulable
        server.cordons = {}
        await server.wait_for(lambda: held_cordoned(server) == [])
    uncordoned = await core.read_node("node-1")
    assert not uncordoned.spec.unschedulable
    assert not uncordoned.metadata.annotations


async def test_executor_reaches_the_cluster_through_a_kubeconfig(
    api: client.ApiClient, server: ContractServer, executor: RunningExecutor, tmp_path: Path
) -> None:
    await client.CoreV1Api(api).create_node(node("node-k"))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.configuration.host)
    kube = KubernetesSettings(kubeconfig=str(kubeconfig))
    async with executor(backend="kubernetes", kubernetes=kube):
        await server.wait_for(lambda: bool(server.lease_requests))
    assert [n.name for n in server.lease_requests[0].nodes] == ["node-k"]


async def test_a_failed_pod_in_a_delete_category_is_deleted_once_its_failure_is_delivered(
    api: client.ApiClient, server: ContractServer, executor: RunningExecutor
) -> None:
    core = client.CoreV1Api(api)
    await core.create_node(node("node-1"))
    categories = msgspec.convert(
        {
            "categories": [
                {
                    "name": "transient",
                    "action": "Delete",
                    "rules": [{"onExitCodes": {"operator": "In", "values": [42]}}],
                },
                {
                    "name": "user-error",
                    "action": "Retain",
                    "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}],
                },
            ]
        },
        ErrorCategoriesSettings,
    )
    backend = ObservedReleases(settings(), 300.0, api=api)
    server.offer(lease("r1", job="j1", node="node-1"), lease("r2", job="j2", node="node-1"))
    async with executor(cluster=backend, backend="kubernetes", error_categories=categories):
        await server.wait_for(lambda: "pending" in server.kinds("r1") and "pending" in server.kinds("r2"))
        for name, code in (("armada-j1-0", 42), ("armada-j2-0", 3)):
            terminated = {"terminated": {"exitCode": code, "reason": "Error"}}
            await set_status(core, name, {"phase": "Failed", "containerStatuses": container(terminated)})
        await server.wait_for(lambda: "failed" in server.kinds("r1") and "failed" in server.kinds("r2"))
        async with asyncio.timeout(60), backend.released:
            await backend.released.wait_for(lambda: backend.done == {"r1", "r2"})
    names = [p.metadata.name for p in (await core.list_namespaced_pod("default")).items]
    assert names == ["armada-j2-0"]  # Delete: gone at once; Retain: kept for the retention period


class ObservedReleases(KubernetesBackend):
    """The real backend, telling the test when a release (and its delete) has finished."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.done: set[str] = set()
        self.released = asyncio.Condition()

    async def release(self, run_id: str, discard: bool = False) -> None:
        await super().release(run_id, discard)
        async with self.released:
            self.done.add(run_id)
            self.released.notify_all()
