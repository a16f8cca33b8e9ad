"""The executor checks every lease again before it creates anything: a lease breaking its
namespaces, pod security profile, service accounts, wildcard tolerations or ingress policy is
reported failed with the reason and never reaches the backend, even when the server stored
and leased such a job."""

from __future__ import annotations

import asyncio
import time

import msgspec

from armada.client import ArmadaClient
from armada.executor.backends.fake import FakeBackend
from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.runner import run_executor
from armada.executor.settings import FakeSettings, IngressSettings, KubernetesSettings
from armada.model import events as ev
from armada.model.ids import new_job_ids, new_run_id
from armada.model.ingress import IngressConfig, ServiceConfig
from armada.model.ingress_policy import IngressPolicy
from armada.model.jobs import Job, ResourceRequirements
from armada.model.leases import Lease
from armada.model.queues import Queue
from tests.integration.executor.conftest import RunningExecutor, fast_settings, lease
from tests.integration.executor.contract_server import ContractServer
from tests.integration.executor.kube_double import kube_cluster
from tests.processes import TEST_EXECUTOR_TOKEN
from tests.servers import serving

HOST_PATH = {"name": "root", "hostPath": {"path": "/"}}


def fake() -> FakeBackend:
    return FakeBackend(FakeSettings(nodes=2), "test-cluster")


def _with_spec(base: Lease, **spec: object) -> Lease:
    return msgspec.structs.replace(base, pod_spec={**base.pod_spec, **spec})


async def test_refused_leases_are_failed_and_never_started(
    server: ContractServer, executor: RunningExecutor
) -> None:
    refused = {
        "hostpath": (_with_spec(lease("hostpath"), volumes=[HOST_PATH]), "podSpec.volumes[0].hostPath"),
        "node": (_with_spec(lease("node"), nodeName="n1"), "podSpec.nodeName"),
        "network": (_with_spec(lease("network"), hostNetwork=True), "podSpec.hostNetwork"),
        "foreign": (lease("foreign", namespace="team-b"), "namespace"),
        "own": (lease("own", namespace="armada-jobs"), "namespace"),
        "account": (
            _with_spec(lease("account"), serviceAccountName="armada-executor"),
            "podSpec.serviceAccountName",
        ),
    }
    server.offer(lease("ok", argv=["sleep", "0"]), *(bad for bad, _ in refused.values()))
    # Its own namespace is refused even where the allow-list names it.
    settings = {"allowed_namespaces": ["default", "armada-jobs"], "own_namespace": "armada-jobs"}
    async with executor(cluster=fake(), **settings):
        await server.wait_for(lambda: {"ok", *refused} <= {e.run_id for e in server.events.values()})
        await server.wait_for(lambda: "succeeded" in server.kinds("ok"))
    assert server.kinds("ok") == ["pending", "running", "succeeded"]
    for run_id, (_, field) in refused.items():
        assert server.kinds(run_id) == ["failed"], run_id  # never pending: nothing was created
        (event,) = (e for e in server.events.values() if e.run_id == run_id)
        assert event.reason.startswith(f"refused by the executor: {field}: "), event.reason
        assert not event.retryable


def _exposing(run: str, **fields: object) -> Lease:
    ported = [{"name": "main", "image": "busybox", "ports": [{"containerPort": 8080}]}]
    return msgspec.structs.replace(lease(run), pod_spec={"containers": ported}, **fields)


async def test_what_the_ingress_policy_refuses_never_reaches_the_cluster(
    server: ContractServer, executor: RunningExecutor
) -> None:
    """Jobs stored before the server's policy tightened (or written around it), leased to an
    executor on a cluster (the Kubernetes API double, the real client): failed by the
    executor naming the field, and not one pod, Service or Ingress made."""
    snippet = {"nginx.ingress.kubernetes.io/server-snippet": "return 200;"}
    refused = {
        "nodeport": (_exposing("nodeport", services=[ServiceConfig(ports=[8080])]), "services[0].type"),
        "reserved": (
            _exposing("reserved", services=[ServiceConfig(type="Headless", ports=[8080], name="nodeport")]),
            "services[0].name",
        ),
        "snippet": (
            _exposing("snippet", ingress=[IngressConfig(ports=[8080], annotations=snippet)]),
            "ingress[0].annotations.nginx.ingress.kubernetes.io/server-snippet",
        ),
        "cert": (
            _exposing("cert", ingress=[IngressConfig(ports=[8080], tls_enabled=True, cert_name="team-b")]),
            "ingress[0].certName",
        ),
        "wildcard": (
            _with_spec(lease("wildcard"), tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]),
            "podSpec.tolerations[0]",
        ),
    }
    # Allowed: a listed annotation, and the operator's own TLS Secret named as certName.
    allowed = _exposing(
        "allowed",
        services=[ServiceConfig(type="Headless", ports=[8080])],
        ingress=[
            IngressConfig(ports=[8080], tls_enabled=True, cert_name="site-tls", annotations={"ok": "1"})
        ],
    )
    server.offer(allowed, *(bad for bad, _ in refused.values()))
    async with kube_cluster() as (double, api):
        cluster = KubernetesBackend(KubernetesSettings(), 300.0, api=api, executor_id="test-cluster")
        ingress = IngressSettings(tls_secret="site-tls")
        async with executor(
            cluster=cluster, ingress=ingress, ingress_policy=IngressPolicy(allowed_annotations=["ok"])
        ):
            await server.wait_for(lambda: set(refused) <= {e.run_id for e in server.events.values()})
            await server.wait_for(lambda: "pending" in server.kinds("allowed"))
        made = {name for (kind, _, name) in double.store.objects if kind in ("pods", "services", "ingresses")}
    assert made == {
        "armada-job-allowed-0",
        "armada-job-allowed-0-headless",
        "armada-job-allowed-0-ingress",
        "armada-job-allowed-0-ingress-0",
    }
    for run_id, (_, field) in refused.items():
        assert server.kinds(run_id) == ["failed"], run_id
        (event,) = (e for e in server.events.values() if e.run_id == run_id)
        assert event.reason.startswith(f"refused by the executor: {field}: "), event.reason
        assert not event.retryable


async def test_a_privileged_executor_runs_what_baseline_refuses(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(_with_spec(lease("hostpath", argv=["sleep", "0"]), volumes=[HOST_PATH]))
    async with executor(cluster=fake(), pod_security_profile="privileged"):
        await server.wait_for(lambda: "succeeded" in server.kinds("hostpath"))


async def test_a_stored_unsafe_job_is_failed_by_the_executor(database_url: str) -> None:
    """A job that bypassed submit (written straight to the log) is leased by the real server,
    refused by the executor, and fails with the executor's reason."""
    with serving(database_url) as api, ArmadaClient(api.url) as client:
        client.create_queue(Queue(name="q"))
        (job_id,) = new_job_ids(1)
        run_id = new_run_id()
        spec = {
            "containers": [
                {
                    "name": "m",
                    "image": "alpine",
                    "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
                }
            ],
            "volumes": [HOST_PATH],
            "priorityClassName": "armada-default",
        }
        job = Job(
            id=job_id,
            queue="q",
            job_set_id="set",
            namespace="default",
            pod_spec=spec,
            scheduling_resource_requirements=ResourceRequirements(requests={"cpu": "1"}, limits={"cpu": "1"}),
        )
        api.append(
            [
                ev.JobSubmitted(job=job, queue="q", job_set_id="set", job_id=job_id),
                ev.JobQueued(queue="q", job_set_id="set", job_id=job_id),
                ev.JobLeased(
                    queue="q",
                    job_set_id="set",
                    job_id=job_id,
                    run_id=run_id,
                    cluster_id="test-cluster",
                    node_id="test-cluster-node-0",
                    pool="default",
                ),
            ]
        )
        settings = msgspec.structs.replace(  # the real server, which lets only executors lease
            fast_settings(ContractServer()), server_url=api.url, token=TEST_EXECUTOR_TOKEN
        )
        task = asyncio.create_task(run_executor(settings, backend=fake()))
        try:
            deadline = time.monotonic() + 60
            while client.job_status([job_id])[job_id] != "FAILED":
                assert time.monotonic() < deadline, client.job_status([job_id])
                assert not task.done(), task
                await asyncio.sleep(0.1)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        error = client.job_errors([job_id])[job_id]
        assert error.startswith("refused by the executor: podSpec.volumes[0].hostPath: "), error
