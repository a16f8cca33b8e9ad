"""The fake backend at scale: 10,000 nodes, thousands of concurrent runs, over real HTTP."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgspec

from armada.executor.backends.fake import FakeBackend, load_node_templates, make_nodes
from armada.executor.settings import FakeSettings, IngressSettings
from armada.model.ingress import IngressConfig, ServiceConfig
from armada.model.ingress_policy import IngressPolicy
from armada.model.leases import Lease
from tests.integration.executor.conftest import RunningExecutor, lease
from tests.integration.executor.contract_server import ContractServer

RUNS = 3000


def exposing(leased: Lease) -> Lease:
    """``leased`` with a NodePort service on 8080 and an ingress on 9090."""
    container = {
        **leased.pod_spec["containers"][0],
        "ports": [{"containerPort": 8080}, {"containerPort": 9090}],
    }
    return msgspec.structs.replace(
        leased,
        pod_spec={"containers": [container]},
        services=[ServiceConfig(ports=[8080])],
        ingress=[IngressConfig(ports=[9090])],
    )


async def test_ten_thousand_nodes_and_thousands_of_concurrent_runs(
    server: ContractServer, executor: RunningExecutor
) -> None:
    ingress = IngressSettings(hostname_suffix="jobs.example.com")
    backend = FakeBackend(FakeSettings(nodes=10_000), "big", ingress=ingress)
    server.offer(
        *(
            lease(f"r{i}", argv=["sh", "-c", "sleep 3; exit 3" if i % 10 == 0 else "sleep 3"])
            if i % 10 != 5
            else exposing(lease(f"r{i}", argv=["sleep", "3"]))
            for i in range(RUNS)
        )
    )
    nodeports = IngressPolicy(allowed_service_types=["NodePort"])
    async with executor(
        cluster=backend,
        cluster_id="big",
        max_new_leases=1000,
        event_batch_size=1000,
        ingress_policy=nodeports,
    ):
        await server.wait_for(
            lambda: sum(e.kind in ("succeeded", "failed") for e in server.events.values()) == RUNS
        )
    request = server.lease_requests[0]
    assert len(request.nodes) == 10_000
    assert request.nodes[-1].allocatable == {"cpu": "64", "memory": "512Gi"}
    kinds = Counter((e.run_id, e.kind) for e in server.events.values())
    assert all(count == 1 for count in kinds.values())
    assert sum(kinds[(f"r{i}", "running")] for i in range(RUNS)) == RUNS
    failed = [e for e in server.events.values() if e.kind == "failed"]
    assert len(failed) == RUNS // 10 and {e.exit_code for e in failed} == {3}
    exposed = [e for e in server.events.values() if e.kind == "ingressInfo"]
    assert len(exposed) == RUNS // 10  # once per run that exposes ports
    for event in exposed:
        node, _, node_port = event.ingress_addresses[8080].partition(":")
        assert node == "test-cluster-node-0" and 30000 <= int(node_port) <= 32767  # the leased node
        pod = f"armada-job-{event.run_id}-0"
        assert event.ingress_addresses[9090] == f"main-9090-{pod}.default.jobs.example.com"
    running_at_once = max(server.held_counts)
    assert running_at_once > 1000, "runs overlap rather than run one after another"


def test_node_templates_file(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(
        """
- count: 2
  namePrefix: gpu
  allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
  labels: {accelerator: a100}
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
- count: 3
  allocatable: {cpu: "8", memory: 32Gi}
"""
    )
    nodes = make_nodes(FakeSettings(node_templates=load_node_templates(path)), "c1")
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "c1-t1-0", "c1-t1-1", "c1-t1-2"]
    assert nodes[0].allocatable["nvidia.com/gpu"] == "8"
    assert nodes[0].labels == {"accelerator": "a100", "kubernetes.io/hostname": "gpu-0"}
    assert nodes[0].taints[0].key == "nvidia.com/gpu" and nodes[2].taints == []


async def test_several_fake_clusters_share_one_server(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(*(lease(f"r{i}", argv=["sleep", "0"]) for i in range(200)))
    east = FakeBackend(FakeSettings(nodes=100), "east")
    west = FakeBackend(FakeSettings(nodes=50), "west")
    async with (
        executor(cluster=east, cluster_id="east", max_new_leases=10),
        executor(cluster=west, cluster_id="west", max_new_leases=10),
    ):
        await server.wait_for(lambda: sum(e.kind == "succeeded" for e in server.events.values()) == 200)
    reporters = {r.executor_id: len(r.nodes) for r in server.lease_requests if r.nodes is not None}
    assert reporters == {"east": 100, "west": 50}
