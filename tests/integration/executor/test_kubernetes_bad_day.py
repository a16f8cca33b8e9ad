"""The kubernetes backend on a bad day, through the API double (issue 45): names a real API
server refuses, admission it does not pass, kubelet-written outcomes, lost nodes and
pending reasons only Events tell."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from armada.executor.backend import RunStatus
from armada.executor.runner import run_executor
from armada.executor.settings import ExecutorSettings
from armada.model.errors import InvalidRequest
from armada.model.leases import TERMINAL_KINDS
from armada.model.metadata import as_label_value
from tests.integration.executor.kube_backend import HANG, POD, Cluster, final
from tests.integration.executor.kube_double import node
from tests.integration.executor.kube_taints import (
    DEFAULT_TOLERATION_SECONDS,
    EVICTION_MESSAGE,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
)


# --- names ---------------------------------------------------------------------------------
async def test_a_queue_stored_with_a_name_kubernetes_refuses_still_gets_its_pod(cluster: Cluster) -> None:
    # A queue created before names had to be label values ("team-"): a 422 and a failed run
    # on every create, unless the label value is mapped.
    await cluster.launch(queue="team-")
    assert cluster.recorder.kinds("r1") == ["pending"]
    assert cluster.double.pod(POD)["metadata"]["labels"]["armada_queue_id"] == as_label_value("team-")


async def test_an_executor_with_a_cluster_id_that_is_no_label_value_does_not_start() -> None:
    settings = ExecutorSettings(cluster_id="cluster-a-", backend="fake")
    with pytest.raises(InvalidRequest) as refused:
        async with asyncio.timeout(HANG):  # a started executor would run until cancelled
            await run_executor(settings)
    assert refused.value.field == "clusterId"


# --- admission -----------------------------------------------------------------------------
async def test_an_invalid_pod_is_the_jobs_failure_with_the_api_servers_causes(cluster: Cluster) -> None:
    await cluster.launch(labels={"team": "a b"})
    status = await final(cluster)
    assert (status.kind, status.retryable) == ("failed", False)
    assert 'Pod "armada-j1-0" is invalid: metadata.labels: Invalid value: "a b"' in status.reason


async def test_a_webhook_refusal_is_the_jobs_failure_with_the_webhooks_message(cluster: Cluster) -> None:
    cluster.double.admission.webhook_denies["team"] = "team label needs approval"
    await cluster.launch(labels={"team": "a"})
    status = await final(cluster)
    assert (status.kind, status.retryable) == ("failed", False)
    assert 'admission webhook "policy.example.com" denied the request: team label needs approval' in (
        status.reason
    )


def sized(cpu: str, memory: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    return {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}


async def test_a_full_cpu_and_memory_quota_returns_the_lease_and_counts_only_unfinished_pods(
    cluster: Cluster,
) -> None:
    # Upstream fails the job on any 403; a full quota is the cluster's state, not the job's.
    cluster.double.admission.add_quota("default", {"requests.cpu": "2", "limits.memory": "4Gi"})
    await cluster.launch(pod_spec=sized("1500m", "3Gi"))
    await cluster.launch("r2", "j2", pod_spec=sized("1", "1Gi"))
    status = await final(cluster, "r2")
    assert (status.kind, status.retryable) == ("leaseReturned", True)
    assert status.reason == (
        'pod creation refused: pods "armada-j2-0" is forbidden: exceeded quota: compute-resources, '
        "requested: requests.cpu=1, used: requests.cpu=1500m, limited: requests.cpu=2"
    )
    cluster.double.run(POD)
    cluster.double.exit(POD, 0)
    await final(cluster)
    await cluster.launch("r3", "j3", pod_spec=sized("1", "1Gi"))
    assert cluster.recorder.kinds("r3") == ["pending"]


# --- lost nodes ----------------------------------------------------------------------------
async def running_on_node_1(cluster: Cluster) -> None:
    await cluster.core.create_node(node("node-1"))
    await cluster.launch()
    cluster.double.run(POD)
    await cluster.recorder.wait_for(lambda: "running" in cluster.recorder.kinds("r1"), within=HANG)


def terminal(cluster: Cluster, run: str = "r1") -> list[RunStatus]:
    return [s for s in cluster.recorder.statuses if s.run_id == run and s.kind in TERMINAL_KINDS]


def one_retryable_lease_return(cluster: Cluster) -> RunStatus:
    """Every terminal status the backend gave is the same retryable lease return (the tracker
    keeps the first and drops repeats: one lease return reaches the server)."""
    ends = {(s.kind, s.retryable, s.run_attempted, s.reason) for s in terminal(cluster)}
    assert len(ends) == 1, ends
    status = terminal(cluster)[0]
    assert (status.kind, status.retryable, status.run_attempted) == ("leaseReturned", True, True)
    return status


def lose_node_1(cluster: Cluster, *, evicted: bool) -> None:
    """node-1 is lost, and with ``evicted`` so for the 300 s its pods tolerate that by default:
    the taint manager has evicted them."""
    cluster.double.lose_node("node-1")
    if evicted:
        cluster.double.pass_time(DEFAULT_TOLERATION_SECONDS)
    assert bool(cluster.double.pod(POD)["metadata"].get("deletionTimestamp")) == evicted


@pytest.mark.parametrize("evicted", [True, False])
async def test_a_lost_nodes_run_ends_with_one_retryable_lease_return_when_the_node_is_deleted(
    cluster: Cluster, evicted: bool
) -> None:
    await running_on_node_1(cluster)
    lose_node_1(cluster, evicted=evicted)
    cluster.double.delete_node("node-1")
    await final(cluster)
    assert one_retryable_lease_return(cluster).reason.startswith("pod disrupted: ")


@pytest.mark.parametrize("evicted", [True, False])
async def test_a_kubelet_back_from_a_partition_ends_the_run_with_one_retryable_lease_return(
    cluster: Cluster, evicted: bool
) -> None:
    # Back, it finds no trace of the containers: ContainerStatusUnknown, exit 137. That is
    # not the job's failure (with or without the taint manager's eviction first).
    await running_on_node_1(cluster)
    lose_node_1(cluster, evicted=evicted)
    cluster.double.restore_node("node-1", kubelet_restarted=True)
    await final(cluster)
    one_retryable_lease_return(cluster)


async def unreachable_seen(cluster: Cluster) -> None:
    """Wait until the backend's node informer has the node's unreachable taint."""
    async with asyncio.timeout(HANG):
        while True:
            reports = {n.name: n for n in await cluster.backend.nodes()}
            node = reports.get("node-1")  # (absent for a moment if the informer relists)
            if node is not None and any(t.key == UNREACHABLE_TAINT for t in node.taints):
                return
            await asyncio.sleep(0.01)


def force_deletes(cluster: Cluster) -> list[str]:
    return [r for r in cluster.double.requests if r.startswith("DELETE ") and "gracePeriodSeconds=0" in r]


async def test_a_killed_pod_on_a_cut_off_node_is_not_force_deleted_until_the_node_is_gone(
    cluster: Cluster,
) -> None:
    await running_on_node_1(cluster)
    lose_node_1(cluster, evicted=False)  # cut off: its container may still run
    await unreachable_seen(cluster)
    checks = f"GET /api/v1/namespaces/default/pods/{POD}"
    killing = asyncio.create_task(cluster.backend.kill("r1"))
    # Past the kill's deadline (grace 1 s + 0.2 s), the pod is checked again and again.
    async with asyncio.timeout(HANG):
        await cluster.double.wait_until(
            lambda: force_deletes(cluster) != [] or sum(r == checks for r in cluster.double.requests) >= 2
        )
    assert force_deletes(cluster) == [] and not killing.done()
    cluster.double.delete_node("node-1")  # an operator confirms the node is dead
    async with asyncio.timeout(HANG):
        await killing
    await cluster.recorder.wait_for(lambda: "r1" in cluster.recorder.gone_runs, within=HANG)
    assert cluster.recorder.gone_runs == ["r1"]
    assert force_deletes(cluster) == []


@pytest.mark.parametrize("cluster", [{"lost_node_pods": "retry"}], indirect=True)
async def test_lost_node_pods_retry_returns_the_lease_of_an_evicted_pod_at_once(cluster: Cluster) -> None:
    await running_on_node_1(cluster)
    lose_node_1(cluster, evicted=True)
    await final(cluster)
    assert "lostNodePods: retry" in one_retryable_lease_return(cluster).reason


@pytest.mark.parametrize(("tolerated", "seconds"), [(None, DEFAULT_TOLERATION_SECONDS), (30, 30)])
async def test_a_not_ready_nodes_run_goes_on_until_its_toleration_runs_out_then_returns_the_lease(
    cluster: Cluster, tolerated: int | None, seconds: int
) -> None:
    # A kubelet that reports its node not ready still stops the pods the taint manager evicts.
    await cluster.core.create_node(node("node-1"))
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if tolerated is not None:
        toleration = {"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute"}
        spec["tolerations"] = [toleration | {"tolerationSeconds": tolerated}]
    await cluster.launch(pod_spec=spec)
    cluster.double.run(POD)
    await cluster.recorder.wait_for(lambda: "running" in cluster.recorder.kinds("r1"), within=HANG)
    cluster.double.node_not_ready("node-1")
    cluster.double.pass_time(seconds - 1)
    assert "deletionTimestamp" not in cluster.double.pod(POD)["metadata"]
    cluster.double.pass_time(1)
    await final(cluster)
    assert one_retryable_lease_return(cluster).reason == f"pod disrupted: {EVICTION_MESSAGE}"


# --- kubelet-written outcomes --------------------------------------------------------------
@pytest.mark.parametrize(
    ("outcome", "reason"),
    [("evict", "The node was low on resource: memory"), ("shutdown", "imminent node shutdown")],
)
async def test_a_kubelet_eviction_or_node_shutdown_is_one_retryable_lease_return(
    cluster: Cluster, outcome: str, reason: str
) -> None:
    await running_on_node_1(cluster)
    getattr(cluster.double, outcome)(POD)
    await final(cluster)
    assert reason in one_retryable_lease_return(cluster).reason


async def test_a_container_that_cannot_start_is_the_jobs_failure(cluster: Cluster) -> None:
    await running_on_node_1(cluster)
    cluster.double.start_error(POD)
    status = await final(cluster)
    assert (status.kind, status.retryable, status.exit_code) == ("failed", False, 128)
    assert "StartError" in status.reason and "executable file not found" in status.reason


# --- pending for reasons only Events tell --------------------------------------------------
@pytest.mark.parametrize("cluster", [{"pending_events_after_seconds": 0}], indirect=True)
@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (lambda d: d.image_not_found(POD), 'Failed: Failed to pull image "busybox"'),
        (
            lambda d: d.missing_volume(POD, "creds"),
            'FailedMount: MountVolume.SetUp failed for volume "creds"',
        ),
    ],
)
async def test_a_pod_pending_for_a_reason_only_events_tell_returns_its_lease_at_once(
    cluster: Cluster, script: Any, reason: str
) -> None:
    await cluster.core.create_node(node("node-1"))
    await cluster.launch()
    script(cluster.double)
    async with asyncio.timeout(HANG):  # until the pod watch brought the waiting state
        while not cluster.recorder.finished("r1"):
            await cluster.backend.housekeeping()
            await asyncio.sleep(0.01)
    status = await final(cluster)
    assert (status.kind, status.retryable) == ("leaseReturned", True)
    assert status.reason.startswith(reason)
    assert cluster.double.store.get("pods", "default", POD) is None, "the hopeless pod is deleted"


@pytest.mark.parametrize("cluster", [{"pending_deadline_seconds": 600}], indirect=True)
async def test_a_local_clock_ahead_of_the_api_servers_does_not_cut_a_fresh_pods_wait_short(
    cluster: Cluster,
) -> None:
    # The API server's clock is an hour behind the executor's: by creationTimestamp, the new
    # pod looks an hour old, past the 10-minute pending deadline.
    cluster.double.clock_behind_seconds = 3600
    await cluster.launch()
    await cluster.backend.housekeeping()
    assert set(cluster.recorder.kinds("r1")) == {"pending"}
