"""Pools from node labels, end to end: ``armada serve`` and two fake executors whose nodes
carry ``armadaproject.io/pool`` labels. Cluster c1 serves two pools (its labelled GPU nodes
and its unlabelled CPU nodes, which take the executor's ``pool``); pool ``gpu`` spans c1 and
c2. Jobs that select the pool's label run on that pool's nodes in both clusters, and the
scheduling report accounts for each pool on its own.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import yaml

from armada.client import ArmadaClient
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, runs_on, states_are, wait_for
from tests.processes import running_server

POOL_LABEL = "armadaproject.io/pool"


def nodes_file(path: Path, templates: list[dict[str, object]]) -> tuple[str, ...]:
    path.write_text(yaml.safe_dump({"nodeTemplates": templates}))
    return ("--fake-nodes-file", str(path))


def two_nodes(prefix: str, labels: dict[str, str]) -> dict[str, object]:
    """A node template: two 1-CPU nodes named ``<prefix>-<n>`` with ``labels``."""
    return {"count": 2, "namePrefix": prefix, "allocatable": {"cpu": "1", "memory": "8Gi"}, "labels": labels}


def gpu_job(command: str) -> JobSubmitRequestItem:
    item = job(command)
    assert item.pod_spec is not None
    item.pod_spec["nodeSelector"] = {POOL_LABEL: "gpu"}
    return item


def test_two_pools_in_one_cluster_and_one_pool_across_two(tmp_path: Path) -> None:
    c1 = nodes_file(tmp_path / "c1.yaml", [two_nodes("c1-gpu", {POOL_LABEL: "gpu"}), two_nodes("c1-cpu", {})])
    c2 = nodes_file(tmp_path / "c2.yaml", [two_nodes("c2-gpu", {POOL_LABEL: "gpu"})])
    with (
        running_server(tmp_path, env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "c1", pool="cpu", args=c1),
        executor(tmp_path, server.url, "c2", pool="cpu", args=c2),
    ):
        client.create_queue(Queue(name="q"))
        wait_for(lambda: len(client.list_executors()) == 2, what="both executors")
        gpu = client.submit_jobs("q", "gpu", [gpu_job("sleep 30") for _ in range(4)])
        cpu = client.submit_jobs("q", "cpu", [job("sleep 30") for _ in range(6)])
        wait_for(states_are(client, gpu, "RUNNING"), what="the GPU jobs to run")
        placed = runs_on(client, gpu)
        assert {node.rsplit("-", 1)[0] for _, node in placed.values()} == {"c1-gpu", "c2-gpu"}
        assert {cluster for cluster, _ in placed.values()} == {"c1", "c2"}
        # The rest of the fleet is c1's two CPU nodes: two CPU jobs run there, four wait.
        wait_for(lambda: sum(s == "RUNNING" for s in client.job_status(cpu).values()) == 2, what="cpu jobs")
        assert {node.rsplit("-", 1)[0] for _, node in runs_on(client, cpu).values()} == {"c1-cpu"}
        assert client.active_queues() == {"cpu": ["q"], "gpu": ["q"]}

        def pools_reported() -> dict[str, float] | None:
            for cycle in client.scheduling_report().cycles:
                if {"cpu", "gpu"} <= set(cycle.pools):
                    return {pool: c.queues["q"].actual_share for pool, c in cycle.pools.items()}
            return None

        shares = wait_for(pools_reported, what="a cycle over both pools")
        assert shares == {"cpu": 1.0, "gpu": 1.0}

        # Lookout's overview: pools by their nodes, executors with the pools they serve.
        overview = httpx.get(f"{server.url}/api/v1/overview").json()
        pools = {p["name"]: (p["executors"], p["nodes"], p["used"]["cpuMillis"]) for p in overview["pools"]}
        assert pools == {"cpu": (1, 2, 2000), "gpu": (2, 4, 4000)}
        assert {e["executorId"]: e["pool"] for e in overview["executors"]} == {"c1": "cpu, gpu", "c2": "gpu"}


def test_the_documented_gpu_fleet_runs(tmp_path: Path) -> None:
    """``docs/examples/fleet.yaml`` under ``serve --dev`` with the fake cluster the docs name:
    a GPU job that selects the H100 pool runs on an H100 node (it tolerates their taint by
    the pool's job defaults), and every pool of the fleet is known."""
    docs = Path(__file__).parents[2] / "docs" / "examples"
    nodes = ("--fake-nodes-file", str(docs / "fleet-nodes.yaml"))
    with (
        running_server(
            tmp_path, "--dev", "--config", str(docs / "fleet.yaml"), env=FAST_SERVER_ENV
        ) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "gpu-east", pool="cpu", args=nodes),
    ):
        client.create_queue(Queue(name="q"))
        wait_for(lambda: len(client.list_executors()) == 2, what="the dev and the fake executor")
        item = job("sleep 30", priority_class="research")
        assert item.pod_spec is not None
        container = item.pod_spec["containers"][0]
        for bound in ("requests", "limits"):
            container["resources"][bound]["nvidia.com/gpu"] = "1"
        item.pod_spec["nodeSelector"] = {POOL_LABEL: "gpu-h100"}
        [gpu] = client.submit_jobs("q", "gpu", [item])
        wait_for(states_are(client, [gpu], "RUNNING"), what="the GPU job to run")
        assert runs_on(client, [gpu])[gpu][1].startswith("h100-")
        assert client.active_queues() == {"gpu-h100": ["q"]}


def test_a_floating_licence_limit_holds_across_two_clusters(tmp_path: Path) -> None:
    config = tmp_path / "floating.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "scheduling": {
                    "floatingResources": [
                        {
                            "name": "example.com/licence",
                            "resolution": "1",
                            "pools": [{"name": "cpu", "quantity": 3}],
                        }
                    ]
                }
            }
        )
    )
    with (
        running_server(tmp_path, "--config", str(config), env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "c1", pool="cpu", args=fake_nodes(2, cpu="4")),
        executor(tmp_path, server.url, "c2", pool="cpu", args=fake_nodes(2, cpu="4")),
    ):
        client.create_queue(Queue(name="q"))
        wait_for(lambda: len(client.list_executors()) == 2, what="both executors")
        items = [job("sleep 30") for _ in range(5)]
        for item in items:
            assert item.pod_spec is not None
            for bound in ("requests", "limits"):
                item.pod_spec["containers"][0]["resources"][bound]["example.com/licence"] = "1"
        licensed = client.submit_jobs("q", "licensed", items)
        plain = client.submit_jobs("q", "plain", [job("sleep 30") for _ in range(4)])
        wait_for(states_are(client, plain, "RUNNING"), what="the jobs without a licence")

        def running() -> list[str]:
            return [j for j, state in client.job_status(licensed).items() if state == "RUNNING"]

        wait_for(lambda: len(running()) == 3, what="three licensed jobs")
        # The two clusters (one pool) have room for all of them: the pool's licences hold the rest.
        report = client.queue_report("q").report
        assert "floating resource example.com/licence exhausted" in report, report
        assert len(running()) == 3


def test_the_fair_share_preemption_rate_limit_bounds_preemptions(tmp_path: Path) -> None:
    """Pool ``cpu`` may preempt one job for fair share, then one per 1000 s: when queue B
    arrives on a cluster queue A fills, one of A's jobs gives way and B's others wait."""
    config = tmp_path / "limited.yaml"
    limit = {"maximumRate": 0.001, "maximumBurst": 1}
    config.write_text(
        yaml.safe_dump({"scheduling": {"pools": [{"name": "cpu", "fairsharePreemptionRateLimit": limit}]}})
    )
    with (
        running_server(tmp_path, "--config", str(config), env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "c1", pool="cpu", args=fake_nodes(4)),
    ):
        client.create_queue(Queue(name="a"))
        client.create_queue(Queue(name="b"))
        wait_for(lambda: len(client.list_executors()) == 1, what="the executor")
        first = client.submit_jobs("a", "a", [job("sleep 120", priority_class="armada-preemptible")] * 4)
        wait_for(states_are(client, first, "RUNNING"), what="queue a's jobs")
        later = client.submit_jobs("b", "b", [job("sleep 120", priority_class="armada-preemptible")] * 4)

        def states() -> tuple[list[str], list[str]]:
            return sorted(client.job_status(first).values()), sorted(client.job_status(later).values())

        wait_for(lambda: states()[1].count("RUNNING") == 1, what="one of queue b's jobs to run")

        def limited_report() -> str | None:
            text = client.queue_report("b").report
            return text if "rate limit reached" in text else None

        report = wait_for(limited_report, what="b's report to name the limit")
        assert "pool cpu: fair-share preemption rate limit reached" in report
        a_states, b_states = states()
        assert a_states.count("RUNNING") == 3 and b_states.count("RUNNING") == 1, (a_states, b_states)
        assert b_states.count("QUEUED") == 3


def test_a_pool_borrows_idle_gpus_of_another_and_gives_them_back(tmp_path: Path) -> None:
    """Pool ``cpu`` borrows the idle GPU nodes of pool ``gpu`` (``awayPools``) for jobs of
    the ``away`` class, which tolerate the GPU nodes' taint only away. When the gpu pool's own
    jobs arrive, the away jobs are preempted first ("away capacity reclaimed") and the home
    jobs run."""
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    config = tmp_path / "away.yaml"
    scheduling = {
        "priorityClasses": {
            "armada-default": {"priority": 1000},
            "away": {
                "priority": 1000,
                "preemptible": True,
                "awayNodeTypes": [{"priority": 900, "wellKnownNodeTypeName": "gpu"}],
            },
        },
        "wellKnownNodeTypes": [{"name": "gpu", "taints": [taint]}],
        "pools": [{"name": "cpu", "awayPools": ["gpu"]}, {"name": "gpu"}],
    }
    config.write_text(yaml.safe_dump({"scheduling": scheduling}))
    gpus = {**two_nodes("gpu", {POOL_LABEL: "gpu"}), "taints": [taint]}
    gpus["allocatable"] = {"cpu": "1", "memory": "8Gi", "nvidia.com/gpu": "1"}
    nodes = nodes_file(tmp_path / "c1.yaml", [gpus, two_nodes("cpu", {})])

    def wants_gpu(item: JobSubmitRequestItem, *, home: bool) -> JobSubmitRequestItem:
        assert item.pod_spec is not None
        for bound in ("requests", "limits"):
            item.pod_spec["containers"][0]["resources"][bound]["nvidia.com/gpu"] = "1"
        if home:
            item.pod_spec["nodeSelector"] = {POOL_LABEL: "gpu"}
            item.pod_spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
        return item

    with (
        running_server(tmp_path, "--config", str(config), env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "c1", pool="cpu", args=nodes),
    ):
        client.create_queue(Queue(name="a"))
        client.create_queue(Queue(name="b"))
        wait_for(lambda: len(client.list_executors()) == 1, what="the executor")
        away = client.submit_jobs(
            "a", "away", [wants_gpu(job("sleep 300", priority_class="away"), home=False)] * 2
        )
        wait_for(states_are(client, away, "RUNNING"), what="the away jobs to borrow the GPUs")
        assert {node.rsplit("-", 1)[0] for _, node in runs_on(client, away).values()} == {"gpu"}
        home = client.submit_jobs("b", "home", [wants_gpu(job("sleep 300"), home=True)] * 2)
        wait_for(states_are(client, home, "RUNNING"), what="the gpu pool's own jobs")
        wait_for(states_are(client, away, "PREEMPTED"), what="the away jobs to give the GPUs back")
        for job_id in away:
            [preempted] = [
                e.event
                for e in client.job_set_events("a", "away")
                if e.event.job_id == job_id
                if e.event.type == "preempted"
            ]
            assert "pool gpu: away capacity reclaimed by job" in str(msgspec.to_builtins(preempted)), (
                preempted
            )
