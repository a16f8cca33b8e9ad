"""Services and Ingresses of jobs that expose ports, against the Kubernetes API double: named
as upstream names them (a named Service under the job's own prefix), labelled, owned by the
pod, removed with it by the garbage collector, and read back into the run's ``ingressInfo``;
an object of the same name not created for the run is never deleted or replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.settings import IngressSettings, KubernetesSettings
from armada.model.ingress import IngressConfig, ServiceConfig
from armada.model.leases import Lease
from tests.integration.executor.kube_double import KubeDouble, kube_cluster
from tests.integration.executor.recorder import Recorder

INGRESS = IngressSettings(
    hostname_suffix="jobs.example.com",
    ingress_class="nginx",
    tls_secret="wildcard",
    annotations={"x": "site"},
)
LABELS = {
    "armada_job_id": "j1",
    "armada_job_run_id": "r1",
    "armada_queue_id": "q",
    "armada_executor_id": "exec-a",
}

Cluster = tuple[KubeDouble, client.ApiClient, KubernetesBackend, Recorder]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with kube_cluster() as (double, api):
        settings = KubernetesSettings(housekeeping_seconds=3600)
        backend = KubernetesBackend(settings, 300.0, api=api, executor_id="exec-a", ingress=INGRESS)
        recorder = Recorder()
        await backend.discover()
        await backend.start(recorder)
        yield double, api, backend, recorder
        await backend.close()


def exposing(run: str, job: str, **fields: Any) -> Lease:
    ports = [{"containerPort": 8080}, {"containerPort": 9090}, {"containerPort": 7000, "protocol": "UDP"}]
    return Lease(
        run_id=run,
        job_id=job,
        queue="q",
        job_set_id="set",
        owner="alice",
        node="node-1",
        pod_spec={"containers": [{"name": "web", "image": "x", "ports": ports}]},
        **fields,
    )


async def objects(api: client.ApiClient) -> dict[str, dict[str, Any]]:
    """Services and Ingresses by name, as the real client lists them."""
    services = await client.CoreV1Api(api).list_namespaced_service("default")
    ingresses = await client.NetworkingV1Api(api).list_namespaced_ingress("default")
    return {
        obj.metadata.name: api.sanitize_for_serialization(obj) for obj in [*services.items, *ingresses.items]
    }


async def test_objects_are_named_labelled_owned_and_give_the_addresses(cluster: Cluster) -> None:
    double, api, backend, recorder = cluster
    recorder.held.add("r1")
    services = [ServiceConfig(ports=[8080]), ServiceConfig(type="Headless", ports=[7000])]
    ingress = [IngressConfig(ports=[9090], tls_enabled=True, annotations={"x": "job"})]
    await backend.launch(exposing("r1", "j1", services=services, ingress=ingress))
    uid = double.pod("armada-j1-0")["metadata"]["uid"]

    found = await objects(api)
    assert set(found) == {
        "armada-j1-0-nodeport",
        "armada-j1-0-headless",
        "armada-j1-0-ingress",
        "armada-j1-0-ingress-0",
    }
    for obj in found.values():
        metadata = obj["metadata"]
        assert metadata["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "armada-j1-0", "uid": uid}
        ]
        assert metadata["labels"] == LABELS
        assert {"armada_jobset_id": "set", "armada_owner": "alice"}.items() <= metadata["annotations"].items()
    node_port = found["armada-j1-0-nodeport"]["spec"]
    assert node_port["type"] == "NodePort"
    assert node_port["selector"] == {"armada_job_id": "j1", "armada_job_run_id": "r1"}
    [port] = node_port["ports"]
    assert (port["name"], port["port"], port["targetPort"], port["protocol"]) == (
        "web-8080",
        8080,
        8080,
        "TCP",
    )
    headless = found["armada-j1-0-headless"]["spec"]
    assert headless["clusterIP"] == "None" and headless["ports"][0]["protocol"] == "UDP"
    assert found["armada-j1-0-ingress"]["spec"]["clusterIP"] == "None"  # no useClusterIP
    routed = found["armada-j1-0-ingress-0"]
    host = "web-9090-armada-j1-0.default.jobs.example.com"
    assert routed["spec"]["ingressClassName"] == "nginx"
    assert routed["spec"]["tls"] == [{"hosts": [host], "secretName": "wildcard"}]
    [rule] = routed["spec"]["rules"]
    assert rule["host"] == host
    assert rule["http"]["paths"][0]["backend"]["service"] == {
        "name": "armada-j1-0-ingress",
        "port": {"number": 9090},
    }
    assert routed["metadata"]["annotations"]["x"] == "site"  # the operator's annotation wins

    assert "ingressInfo" not in recorder.kinds("r1")  # not before the pod runs
    double.run("armada-j1-0", host_ip="10.0.0.7")
    await recorder.wait_for(lambda: "ingressInfo" in recorder.kinds("r1"), within=10)
    info = next(s for s in recorder.statuses if s.kind == "ingressInfo")
    assert info.ingress_addresses == {8080: f"10.0.0.7:{port['nodePort']}", 9090: host}
    assert (info.node, info.pod_ip) == ("node-1", "10.244.0.2")

    # Killing the run deletes its pod only; the garbage collector takes what the pod owned.
    await backend.kill("r1")
    async with asyncio.timeout(10):
        while await objects(api):  # noqa: ASYNC110 - the collector runs apart: ask the API
            await asyncio.sleep(0.05)


async def service_named(api: client.ApiClient, name: str, labels: dict[str, str] | None = None) -> str:
    """Create a Service as someone else would (not for run ``r1``); return its uid."""
    body = {"metadata": {"name": name, "labels": labels or {}}, "spec": {"ports": [{"port": 443}]}}
    created = await client.CoreV1Api(api).create_namespaced_service("default", body)
    return str(created.metadata.uid)


async def test_another_service_of_the_name_is_left_alone_and_the_run_fails(cluster: Cluster) -> None:
    double, api, backend, recorder = cluster
    uid = await service_named(api, "armada-j1-0-nodeport")
    recorder.held.add("r1")
    await backend.launch(exposing("r1", "j1", services=[ServiceConfig(ports=[8080])]))

    service = (await objects(api))["armada-j1-0-nodeport"]
    assert service["metadata"]["uid"] == uid  # neither deleted nor replaced
    assert [p["port"] for p in service["spec"]["ports"]] == [443]
    [failed] = [s for s in recorder.statuses if s.run_id == "r1" and s.kind != "pending"]
    assert (failed.kind, failed.retryable) == ("failed", False)
    assert "Service default/armada-j1-0-nodeport already exists and was not created for this run" in (
        failed.reason
    )
    assert double.store.get("pods", "default", "armada-j1-0") is None  # the run's own pod is deleted


async def test_an_earlier_runs_leftover_is_left_alone_and_the_lease_returned(cluster: Cluster) -> None:
    double, api, backend, recorder = cluster
    uid = await service_named(api, "armada-j1-0-nodeport", {**LABELS, "armada_job_run_id": "r0"})
    recorder.held.add("r1")
    await backend.launch(exposing("r1", "j1", services=[ServiceConfig(ports=[8080])]))

    assert (await objects(api))["armada-j1-0-nodeport"]["metadata"]["uid"] == uid
    [returned] = [s for s in recorder.statuses if s.run_id == "r1" and s.kind != "pending"]
    assert (returned.kind, returned.retryable) == ("leaseReturned", True)
    assert "run r0 of this job left it" in returned.reason
    assert double.store.get("pods", "default", "armada-j1-0") is None


async def test_the_runs_own_object_of_the_name_is_kept(cluster: Cluster) -> None:
    """A create that landed though its answer was lost: labelled for this very run."""
    _, api, backend, recorder = cluster
    uid = await service_named(api, "armada-j1-0-nodeport", LABELS)
    recorder.held.add("r1")
    await backend.launch(exposing("r1", "j1", services=[ServiceConfig(ports=[8080])]))
    assert set(recorder.kinds("r1")) == {"pending"}
    assert (await objects(api))["armada-j1-0-nodeport"]["metadata"]["uid"] == uid


async def test_a_named_service_is_named_under_the_jobs_prefix(cluster: Cluster) -> None:
    """The review's repro: a Headless service named ``kubernetes`` in ``default`` would have
    deleted the API server's Service and selected the job's pod instead."""
    _, api, backend, recorder = cluster
    uid = await service_named(api, "kubernetes")
    recorder.held |= {"r1", "r2"}
    await backend.launch(
        exposing("r1", "j1", services=[ServiceConfig(type="Headless", ports=[7000], name="kubernetes")])
    )
    await backend.launch(exposing("r2", "j2"))
    found = await objects(api)
    assert set(found) == {"kubernetes", "armada-j1-0-kubernetes"}
    assert found["kubernetes"]["metadata"]["uid"] == uid
    assert "selector" not in found["kubernetes"]["spec"]
    assert found["armada-j1-0-kubernetes"]["spec"]["selector"] == {
        "armada_job_id": "j1",
        "armada_job_run_id": "r1",
    }
    assert set(recorder.kinds("r1")) == {"pending"}


async def test_a_restarted_executor_reports_the_addresses_of_the_runs_it_adopts(cluster: Cluster) -> None:
    double, api, backend, recorder = cluster
    recorder.held.add("r1")
    await backend.launch(exposing("r1", "j1", ingress=[IngressConfig(ports=[9090])]))
    double.run("armada-j1-0")
    await recorder.wait_for(lambda: "ingressInfo" in recorder.kinds("r1"), within=10)
    await backend.close()

    again = KubernetesBackend(KubernetesSettings(), 300.0, api=api, executor_id="exec-a", ingress=INGRESS)
    adopted = Recorder()
    assert [run.run_id for run in await again.discover()] == ["r1"]
    adopted.held.add("r1")
    await again.start(adopted)
    try:
        await adopted.wait_for(lambda: "ingressInfo" in adopted.kinds("r1"), within=10)
    finally:
        await again.close()
    [info] = [s for s in adopted.statuses if s.kind == "ingressInfo"]
    assert info.ingress_addresses == {9090: "web-9090-armada-j1-0.default.jobs.example.com"}
