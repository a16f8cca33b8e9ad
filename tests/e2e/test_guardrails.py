"""Submission guardrails end to end: ``armada serve`` with upstream's ``submission`` defaults and
``priorityClassNameOverride``, a real ``armada executor --backend kubernetes`` on the Kubernetes
API double, jobs submitted over REST and gRPC (upstream's ``armada-client``).

Each default must show twice: in the job's details (the stored spec the scheduler reads) and in
the pod the executor created. A gang without a uniformity label gets the default one, is placed
on one rack, and its pods' env names the label and the rack; with the process backend
(``--dev``) a gang's members see the same variables in their own environment.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from armada_client.client import ArmadaClient as UpstreamClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

from armada.client import ArmadaClient
from armada.client.aio import AsyncArmadaClient
from armada.client.errors import ArmadaApiError
from armada.model.ids import pod_name
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from tests.e2e.cluster import FAST_SERVER_ENV, executor, gang, job, states_are, wait_for
from tests.integration.executor.kube_double import KubeDouble, kube_cluster
from tests.processes import free_port, running_server

DEFAULT = {"key": "example.com/default", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
PREEMPTIBLE = {"key": "example.com/preemptible", "operator": "Exists", "value": "", "effect": "NoSchedule"}
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "value": "", "effect": "NoSchedule"}
GUARDRAILS = {
    "ARMADA_SUBMISSION_DEFAULT_ACTIVE_DEADLINE": "72h",
    "ARMADA_SUBMISSION_DEFAULT_ACTIVE_DEADLINE_BY_RESOURCE_REQUEST": json.dumps({"nvidia.com/gpu": "336h"}),
    "ARMADA_SUBMISSION_MIN_TERMINATION_GRACE_PERIOD": "2s",
    "ARMADA_SUBMISSION_MAX_TERMINATION_GRACE_PERIOD": "5m",
    "ARMADA_SUBMISSION_DEFAULT_JOB_TOLERATIONS": json.dumps([DEFAULT]),
    "ARMADA_SUBMISSION_DEFAULT_JOB_TOLERATIONS_BY_PRIORITY_CLASS": json.dumps(
        {"armada-preemptible": [PREEMPTIBLE]}
    ),
    "ARMADA_SUBMISSION_DEFAULT_JOB_TOLERATIONS_BY_RESOURCE_REQUEST": json.dumps({"nvidia.com/gpu": [GPU]}),
    "ARMADA_SUBMISSION_DEFAULT_GANG_NODE_UNIFORMITY_LABEL": "rack",
    "ARMADA_SCHEDULING_PRIORITY_CLASS_NAME_OVERRIDE": "batch-low",
}
HOUR = 3600


def kube_node(name: str, rack: str, cpu: str, gpus: str = "") -> dict[str, Any]:
    """A ready node; one with GPUs is tainted for them, so only the GPU toleration lets jobs on."""
    taints = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}] if gpus else []
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "rack": rack}},
        "spec": {"taints": taints},
        "status": {
            "allocatable": {
                "cpu": cpu,
                "memory": "32Gi",
                "pods": "110",
                **({"nvidia.com/gpu": gpus} if gpus else {}),
            },
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def kubeconfig(path: Path, host: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: t, cluster: {{server: "{host}"}}}}]\n'
        "users: [{name: t, user: {token: t}}]\n"
        "contexts: [{name: t, context: {cluster: t, user: t}}]\ncurrent-context: t\n"
    )
    return path


async def pods(double: KubeDouble, job_ids: list[str], timeout: float = 60) -> dict[str, dict[str, Any]]:
    """The executor's pods of ``job_ids``, once it has created them all."""
    for _ in range(int(timeout / 0.2)):
        found = {j: double.store.get("pods", "default", pod_name(j)) for j in job_ids}
        if all(found.values()):
            return {j: dict(p) for j, p in found.items() if p is not None}
        await asyncio.sleep(0.2)
    raise TimeoutError(f"pods of {job_ids} not created")


def pinned_node(pod: dict[str, Any]) -> str:
    required = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    node: str = required["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
    return node


def gpu_job() -> JobSubmitRequestItem:
    item = job("sleep 60", cpu="100m")
    resources = item.pod_spec["containers"][0]["resources"]  # type: ignore[index]
    resources["requests"]["nvidia.com/gpu"] = resources["limits"]["nvidia.com/gpu"] = "1"
    return item


def grpc_job(grace: int = 0) -> core_v1.PodSpec:
    quantity = {"cpu": resource.Quantity(string="100m"), "memory": resource.Quantity(string="64Mi")}
    container = core_v1.Container(
        name="main",
        image="alpine",
        args=["sleep", "1"],
        resources=core_v1.ResourceRequirements(requests=quantity, limits=quantity),
    )
    spec = core_v1.PodSpec(containers=[container], restartPolicy="Never")
    if grace:
        spec.terminationGracePeriodSeconds = grace
    return spec


async def test_guardrails_reach_the_stored_job_and_the_pod(tmp_path: Path) -> None:
    grpc_port = free_port()
    env = {**FAST_SERVER_ENV, **GUARDRAILS}
    async with kube_cluster() as (double, api):
        double.add_namespace("default")
        double.add_priority_class("batch-low")
        # Rack r1 cannot hold the gang (one CPU); rack r2 can.
        for name, rack, cpu in (("k1", "r1", "1"), ("k2", "r2", "4"), ("k3", "r2", "4")):
            double.store.put("nodes", kube_node(name, rack, cpu))
        double.store.put("nodes", kube_node("g1", "r3", "4", gpus="1"))
        config = kubeconfig(tmp_path / "kubeconfig", api.configuration.host)
        with (
            running_server(tmp_path, "--grpc-port", str(grpc_port), env=env) as server,
            executor(tmp_path, server.url, "kube", backend="kubernetes", args=("--kubeconfig", str(config))),
        ):
            async with AsyncArmadaClient(server.url) as client:
                await client.create_queue(Queue(name="q"))
                # REST: a plain job, a preemptible one, a gang of two (no uniformity label).
                plain, preemptible = await client.submit_jobs(
                    "q",
                    "s",
                    [
                        job("sleep 60", cpu="100m"),
                        job("sleep 60", cpu="100m", priority_class="armada-preemptible"),
                    ],
                )
                members = await client.submit_jobs("q", "s", gang(2, "sleep 60", "g", cpu="2"))
                (gpu,) = await client.submit_jobs("q", "s", [gpu_job()])
                # gRPC, through upstream's client.
                upstream = UpstreamClient(grpc.insecure_channel(f"127.0.0.1:{grpc_port}"))
                item = upstream.create_job_request_item(priority=1, namespace="default", pod_spec=grpc_job())
                (via_grpc,) = [i.job_id for i in upstream.submit_jobs("q", "s", [item]).job_response_items]
                job_ids = [plain, preemptible, *members, via_grpc, gpu]
                deadline = {j: 336 * HOUR if j == gpu else 72 * HOUR for j in job_ids}
                tolerations = {j: [DEFAULT] for j in job_ids}
                tolerations[preemptible] = [DEFAULT, PREEMPTIBLE]
                tolerations[gpu] = [DEFAULT, GPU]

                details = await client.job_details(job_ids, expand_spec=True)
                specs = {j: details[j].job_spec for j in job_ids}
                stored = {j: spec.pod_spec for j, spec in specs.items() if spec is not None}
                assert len(stored) == len(job_ids), "every job's stored spec is shown"
                for job_id, spec in stored.items():
                    assert spec["activeDeadlineSeconds"] == deadline[job_id], job_id
                    assert spec["terminationGracePeriodSeconds"] == 2, job_id
                    assert spec["tolerations"] == tolerations[job_id], job_id
                for member in members:
                    assert specs[member].annotations["armadaproject.io/gangNodeUniformityLabel"] == "rack"
                # Armada's own class still drives scheduling; the override is for Kubernetes only.
                assert specs[preemptible].priority_class_name == "armada-preemptible"

                # Out of bounds: refused over both APIs, naming the field, nothing stored.
                too_long = job("sleep 1")
                too_long.pod_spec["terminationGracePeriodSeconds"] = 3600  # type: ignore[index]
                with pytest.raises(ArmadaApiError) as refused:
                    await client.submit_jobs("q", "s", [too_long])
                assert (refused.value.status, refused.value.field) == (
                    400,
                    "jobRequestItems[0].podSpec.terminationGracePeriodSeconds",
                )
                bad = upstream.create_job_request_item(
                    priority=1, namespace="default", pod_spec=grpc_job(grace=3600)
                )
                with pytest.raises(grpc.RpcError) as rpc_refused:
                    upstream.submit_jobs("q", "s", [bad])
                assert rpc_refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "terminationGracePeriodSeconds" in str(rpc_refused.value.details())

                created = await pods(double, job_ids)
            for job_id, pod in created.items():
                spec = pod["spec"]
                assert spec["activeDeadlineSeconds"] == deadline[job_id], job_id
                assert spec["terminationGracePeriodSeconds"] == 2, job_id
                # (the API server's DefaultTolerationSeconds admission adds the last two)
                assert spec["tolerations"][:-2] == tolerations[job_id], job_id
                assert spec["priorityClassName"] == "batch-low", job_id
            # The GPU toleration let the GPU job onto the tainted GPU node.
            assert pinned_node(created[gpu]) == "g1"
            racks = set()
            for member in members:
                spec = created[member]["spec"]
                env_vars = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
                assert env_vars["ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME"] == "rack"
                racks.add(env_vars["ARMADA_GANG_NODE_UNIFORMITY_LABEL_VALUE"])
                assert pinned_node(created[member]) in ("k2", "k3")
            assert racks == {"r2"}
            plain_env = {e["name"] for e in created[plain]["spec"]["containers"][0]["env"]}
            assert "ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME" not in plain_env


def test_gang_members_running_as_local_processes_see_their_node(tmp_path: Path) -> None:
    """``armada serve --dev`` (the process backend): a gang uniform by the default label runs,
    and each member's environment names the label and its node."""
    out = tmp_path / "env"
    out.mkdir()
    env = {
        **FAST_SERVER_ENV,
        "ARMADA_SUBMISSION_DEFAULT_GANG_NODE_UNIFORMITY_LABEL": "kubernetes.io/hostname",
        "ARMADA_EXECUTOR_PROCESS": json.dumps({"stateDir": str(tmp_path / "runs"), "nodeName": "local-7"}),
    }
    label = "ARMADA_GANG_NODE_UNIFORMITY_LABEL"
    command = f'echo "${label}_NAME=${label}_VALUE" > {out}/$ARMADA_JOB_ID'
    with running_server(tmp_path, "--dev", env=env) as server, ArmadaClient(server.url) as client:
        client.create_queue(Queue(name="q"))
        members = client.submit_jobs("q", "s", gang(2, command, "g", cpu="100m"))
        wait_for(states_are(client, members, "SUCCEEDED"), what="the gang to finish")
    assert {(out / m).read_text().strip() for m in members} == {"kubernetes.io/hostname=local-7"}
