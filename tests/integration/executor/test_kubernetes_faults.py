"""The kubernetes backend against an API double that fails, lags and disrupts like a real cluster.

Each test reproduces one way the executor used to lose or duplicate work on a real
cluster (issue #21): the rule it checks is in its name.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from armada.executor.backends.kube_calls import close_api
from armada.executor.backends.kubernetes import api_client_from
from armada.executor.settings import KubernetesSettings
from tests.integration.executor.conftest import lease
from tests.integration.executor.kube_backend import (
    HANG,
    POD,
    Cluster,
    final,
    fresh_nodes,
    only_pending,
    usage_becomes,
)
from tests.integration.executor.kube_double import (
    Fault,
    KubeDouble,
    node,
    plain_pod,
    write_kubeconfig,
)
from tests.integration.executor.oidc_issuer import id_token, oidc_issuer


# --- 1. double runs --------------------------------------------------------------------
@pytest.mark.parametrize("cluster", [{"resync_seconds": 0.05}], indirect=True)
async def test_a_pod_created_during_a_slow_relist_is_not_reported_gone(cluster: Cluster) -> None:
    # The relist reads the cluster before the launch, and its answer arrives after it.
    hold = cluster.double.hold(r"GET /api/v1/pods\?(?!.*watch)(?=.*labelSelector=armada_job_run_id)")
    await hold.arrived.wait()
    await cluster.launch()
    seen = len(cluster.double.requests)
    hold.release.set()
    await cluster.double.wait_for_request(r"GET /api/v1/pods\?.*watch", after=seen)
    assert "r1" not in cluster.recorder.gone_runs
    assert not cluster.recorder.finished("r1")


@pytest.mark.parametrize(
    "fault", [Fault("POST .*/pods", status=500, after=True), Fault("POST .*/pods", reset=True, after=True)]
)
async def test_a_create_applied_but_not_answered_is_read_back(cluster: Cluster, fault: Fault) -> None:
    cluster.double.faults.append(fault)
    await cluster.launch()
    assert only_pending(cluster, "r1")
    assert cluster.double.pod(POD)["metadata"]["labels"]["armada_job_run_id"] == "r1"


# --- 2. true outcomes ------------------------------------------------------------------
@pytest.mark.parametrize("exit_code", [143, 0])
@pytest.mark.parametrize("how", ["drain", "delete"])
async def test_a_pod_disrupted_or_deleted_by_someone_else_is_a_returned_lease(
    cluster: Cluster, exit_code: int, how: str
) -> None:
    await cluster.launch()
    cluster.double.run(POD)
    await cluster.recorder.wait_for(lambda: "running" in cluster.recorder.kinds("r1"))
    cluster.double.sigterm_exit[POD] = exit_code
    if how == "drain":
        cluster.double.disrupt(POD)
    else:
        await cluster.core.delete_namespaced_pod(POD, "default")
    status = await final(cluster)
    assert (status.kind, status.retryable, status.run_attempted) == ("leaseReturned", True, True)


async def test_a_kubelet_admission_error_is_a_returned_lease_not_an_attempt(cluster: Cluster) -> None:
    await cluster.launch()
    cluster.double.bind(POD, "node-1")
    cluster.double.reject(POD, "UnexpectedAdmissionError", "Allocate failed due to no healthy devices")
    status = await final(cluster)
    assert (status.kind, status.retryable, status.run_attempted) == ("leaseReturned", True, False)
    assert "Allocate failed" in status.reason


# --- 4. timeouts -------------------------------------------------------------------------
async def test_a_create_that_hangs_times_out_and_is_retried(cluster: Cluster) -> None:
    cluster.double.faults.append(Fault("POST .*/pods", delay=3600))
    await cluster.launch()
    assert only_pending(cluster, "r1")


async def test_the_log_tail_of_a_pod_with_a_sidecar_is_the_failed_containers(cluster: Cluster) -> None:
    sidecar = {"name": "proxy", "image": "envoy"}
    spec = {"containers": [{"name": "main", "image": "busybox"}, sidecar]}
    cluster.recorder.held.add("r1")
    leased = lease("r1", job="j1", node="node-1")
    leased.pod_spec = spec
    await cluster.backend.launch(leased)
    cluster.double.logs[("default", POD, "main")] = "boom\n"
    cluster.double.bind(POD, "node-1")
    ends = [
        {"name": "main", "state": {"terminated": {"exitCode": 2, "reason": "Error"}}},
        {"name": "proxy", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
    ]
    cluster.double.set_pod(POD, phase="Failed", containerStatuses=ends)
    status = await final(cluster)
    assert (status.kind, status.exit_code, status.log_tail.strip()) == ("failed", 2, "boom")


# --- 5. stuck terminating ------------------------------------------------------------------
@pytest.mark.parametrize("finalizer", [False, True])
async def test_a_pod_stuck_terminating_is_force_deleted_and_reported_gone(
    cluster: Cluster, finalizer: bool
) -> None:
    await cluster.launch()
    cluster.double.run(POD, node="lost-node")
    cluster.double.unreachable.add("lost-node")
    if finalizer:
        await cluster.core.patch_namespaced_pod(
            POD, "default", {"metadata": {"finalizers": ["example.com/hold"]}}
        )
    async with asyncio.timeout(HANG):
        await cluster.backend.kill("r1")
    assert "r1" in cluster.recorder.gone_runs
    assert any(
        "gracePeriodSeconds=0" in line for line in cluster.double.requests if line.startswith("DELETE")
    )


# --- 6. pinning and node capacity -------------------------------------------------------
async def test_pods_are_pinned_by_node_name_not_a_hostname_label(cluster: Cluster) -> None:
    await cluster.launch(node="node-1.example.internal")
    spec = cluster.double.pod(POD)["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1.example.internal"]}]}
    ]
    assert "kubernetes.io/hostname" not in (spec.get("nodeSelector") or {})


async def test_the_node_report_counts_pods_against_the_pods_capacity(cluster: Cluster) -> None:
    await cluster.core.create_node(node("node-1"))
    await cluster.core.create_namespaced_pod("kube-system", plain_pod("daemon", "node-1", "100m", "1Gi"))
    await cluster.core.create_namespaced_pod("kube-system", plain_pod("agent", "node-1", "100m", "1Gi"))
    (report,) = await fresh_nodes(cluster)
    assert report.allocated_non_armada["pods"] == "2"


async def test_the_node_report_follows_pods_and_nodes_through_watches(cluster: Cluster) -> None:
    await cluster.core.create_node(node("node-1"))
    await usage_becomes(cluster, "node-1", {})
    await cluster.core.create_namespaced_pod("kube-system", plain_pod("daemon", "node-1", "500m", "1Gi"))
    await usage_becomes(cluster, "node-1", {"cpu": "500m", "memory": "1Gi", "pods": "1"})
    cluster.double.set_pod("daemon", "kube-system", phase="Succeeded")  # leaves the selected set
    await usage_becomes(cluster, "node-1", {})
    list_calls = [
        r for r in cluster.double.requests if r.startswith("GET /api/v1/nodes?") and "watch" not in r
    ]
    assert len(list_calls) == 1, "listed once, then watched"


# --- 7. create errors ------------------------------------------------------------------------
def quota(double: KubeDouble, *, computed: bool) -> None:
    """A quota of no pods at all (its usage computed), or one not computed yet."""
    double.admission.add_quota("default", {"pods": "0" if computed else "9"}, computed=computed)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            lambda d: (d.add_priority_class("armada-default"), quota(d, computed=True)),
            "exceeded quota",
        ),
        (
            lambda d: (d.add_priority_class("armada-default"), quota(d, computed=False)),
            "status unknown for quota",
        ),
        (lambda d: d.add_namespace("default", terminating=True), "being terminated"),
        (lambda d: None, "no PriorityClass with name armada-default"),
    ],
)
async def test_cluster_side_create_refusals_return_the_lease_with_the_apis_message(
    cluster: Cluster, script: Any, message: str
) -> None:
    script(cluster.double)
    await cluster.launch(priority_class_name="armada-default")
    status = await final(cluster)
    assert (status.kind, status.retryable) == ("leaseReturned", True)
    assert message in status.reason


@pytest.mark.parametrize(
    "fault",
    [Fault("POST .*/pods", status=429, retry_after=0, times=2), Fault("POST .*/pods", status=503, times=2)],
)
async def test_throttled_and_unavailable_creates_are_retried(cluster: Cluster, fault: Fault) -> None:
    cluster.double.faults.append(fault)
    await cluster.launch()
    assert only_pending(cluster, "r1")
    assert fault.times == 0


@pytest.mark.parametrize("cluster", [{"max_concurrent_creates": 2}], indirect=True)
async def test_concurrent_creates_are_bounded(cluster: Cluster) -> None:
    cluster.double.latency = 0.02
    await asyncio.gather(*(cluster.launch(f"r{i}", f"j{i}") for i in range(8)))
    assert cluster.double.max_in_flight["POST"] == 2
    assert all(only_pending(cluster, f"r{i}") for i in range(8))


# --- 8. nodes briefly NotReady ---------------------------------------------------------
async def test_a_node_briefly_not_ready_is_still_reported_ready(cluster: Cluster) -> None:
    await cluster.core.create_node(node("node-1"))
    cluster.double.node_condition("node-1", ready=False)
    await cluster.core.create_node(node("node-2"))
    cluster.double.node_condition("node-2", ready=False, since="2020-01-01T00:00:00Z")
    reports = {n.name: n.ready for n in await fresh_nodes(cluster)}
    assert reports == {"node-1": True, "node-2": False}


# --- 10. executor identity, proxies -------------------------------------------------------
async def test_pods_carry_the_executor_id_and_other_executors_pods_are_left_alone(cluster: Cluster) -> None:
    await cluster.launch()
    assert cluster.double.pod(POD)["metadata"]["labels"]["armada_executor_id"] == "exec-a"
    theirs = plain_pod(
        "armada-j9-0", "node-1", "1", "1Gi", {"armada_job_run_id": "r9", "armada_executor_id": "exec-b"}
    )
    theirs["metadata"]["namespace"] = "default"
    await cluster.core.create_namespaced_pod("default", theirs)
    assert [f.run_id for f in await cluster.backend.discover()] == ["r1"]


async def test_a_proxy_in_the_environment_is_not_used_for_the_api_server(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.api.configuration.host)
    async with await api_client_from(KubernetesSettings(kubeconfig=str(kubeconfig))) as api:
        listed = await client.CoreV1Api(api).list_namespace(_request_timeout=5)
    assert {n.metadata.name for n in listed.items} >= {"default"}


# --- watches that end, and 410 --------------------------------------------------------------
async def test_ended_watches_are_renewed_and_a_410_relists(cluster: Cluster) -> None:
    await cluster.launch()
    cluster.double.end_watches()
    cluster.double.run(POD)
    await cluster.recorder.wait_for(lambda: "running" in cluster.recorder.kinds("r1"))
    seen = len(cluster.double.requests)
    cluster.double.store.compact()
    cluster.double.end_watches()
    await cluster.double.wait_for_request(r"GET /api/v1/pods\?(?!.*watch)", after=seen)  # the relist
    cluster.double.exit(POD, 0)
    assert (await final(cluster)).kind == "succeeded"


# --- 9. credentials ---------------------------------------------------------------------------
_EXEC_PLUGIN = """
import json, pathlib, sys
count = pathlib.Path(sys.argv[1])
n = int(count.read_text() or 0) + 1 if count.exists() else 1
count.write_text(str(n))
status = {"token": f"token-{n}", "expirationTimestamp": "2000-01-01T00:00:00Z"}
version = "client.authentication.k8s.io/v1beta1"
print(json.dumps({"apiVersion": version, "kind": "ExecCredential", "status": status}))
"""


async def test_exec_plugin_tokens_are_refreshed(cluster: Cluster, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(_EXEC_PLUGIN)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin), str(tmp_path / "count")],
        }
    }
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.api.configuration.host, user)
    settings = KubernetesSettings(kubeconfig=str(kubeconfig), credential_refresh_seconds=0.05)
    api = await api_client_from(settings)
    try:
        core = client.CoreV1Api(api)
        async with asyncio.timeout(HANG):
            while True:
                await core.list_namespace()
                if cluster.double.tokens[-1] not in ("", "token-1"):
                    break
                await asyncio.sleep(0.05)
    finally:
        await close_api(api)
    assert cluster.double.tokens[-1].startswith("token-")


async def test_oidc_auth_provider_tokens_are_renewed_before_they_expire(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A kubeconfig ``auth-provider: oidc`` token is renewed with its refresh token once it
    expires within five minutes (kubernetes-asyncio's margin), not when it has expired."""
    async with oidc_issuer() as issuer:
        issuer.token_seconds = 3600
        first = id_token("user-0", time.time() + 300 + 4.0)  # inside the margin in 4 s
        provider = {
            "name": "oidc",
            "config": {
                "client-id": "armada",
                "client-secret": "s3cret",
                "idp-issuer-url": issuer.url,
                "id-token": first,
                "refresh-token": "refresh-0",
            },
        }
        kubeconfig = write_kubeconfig(
            tmp_path / "kubeconfig", cluster.api.configuration.host, {"auth-provider": provider}
        )
        settings = KubernetesSettings(kubeconfig=str(kubeconfig), credential_refresh_seconds=0.05)
        api = await api_client_from(settings)
        try:
            core = client.CoreV1Api(api)
            await core.list_namespace()
            assert ours(cluster) == {first}, "a token still valid is used as it is"
            async with asyncio.timeout(HANG):
                while ours(cluster) == {first}:
                    await asyncio.sleep(0.05)
                    await core.list_namespace()
        finally:
            await close_api(api)
    assert issuer.grants == [("armada", "refresh-0")], "renewed once, with the refresh token"
    assert ours(cluster) == {first, issuer.issued[0]}


def ours(cluster: Cluster) -> set[str]:
    """Tokens the API double saw (the fixture's own backend sends none)."""
    return set(cluster.double.tokens) - {""}


async def test_an_expired_oidc_token_is_renewed_at_start_and_the_rotated_one_saved(
    cluster: Cluster, tmp_path: Path
) -> None:
    async with oidc_issuer() as issuer:
        provider = {
            "name": "oidc",
            "config": {
                "client-id": "armada",
                "idp-issuer-url": issuer.url,
                "id-token": id_token("user-0", time.time() - 60),
                "refresh-token": "refresh-0",
            },
        }
        kubeconfig = write_kubeconfig(
            tmp_path / "kubeconfig", cluster.api.configuration.host, {"auth-provider": provider}
        )
        api = await api_client_from(KubernetesSettings(kubeconfig=str(kubeconfig)))
        try:
            await client.CoreV1Api(api).list_namespace()
        finally:
            await close_api(api)
    assert issuer.grants == [("armada", "refresh-0")], "a public client names itself in the form"
    assert ours(cluster) == {issuer.issued[0]}, "the expired token was never sent"
    saved = kubeconfig.read_text()
    assert "refresh-1" in saved and issuer.issued[0] in saved, "a restart starts from the rotated tokens"
