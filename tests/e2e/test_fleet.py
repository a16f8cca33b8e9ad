"""Operating a fleet end to end: ``armada serve`` and two fake executors, driven by the CLI.

Cordoning an executor sends new jobs to the other while its running jobs finish; a node
cordon reaches the executor (which reports the node unschedulable) and nothing is placed
there; preempting on a node hits exactly the matching jobs; forgetting a stopped executor
requeues its jobs once and they finish elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.e2e.cli import armada
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, runs_on, states_are, wait_for
from tests.processes import running_server

#: Executors are only forgotten on purpose here: no expiry during the test.
ENV = {**FAST_SERVER_ENV, "ARMADA_SCHEDULER_EXECUTOR_TIMEOUT": "600"}


def cli_ok(url: str, *args: str) -> str:
    result = armada(url, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_cordon_drain_preempt_and_forget(tmp_path: Path) -> None:
    with (
        running_server(tmp_path, env=ENV) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "c1", args=fake_nodes(3)) as first,
        executor(tmp_path, server.url, "c2", args=fake_nodes(3)),
    ):
        url = server.url
        client.create_queue(Queue(name="q"))
        wait_for(lambda: len(client.list_executors()) == 2, what="both executors")

        # A long job on c1 for sure (c2 cordoned meanwhile), then cordon c1: new jobs go to
        # c2 only, and the long one goes on and finishes on c1.
        cli_ok(url, "executor-settings", "cordon", "c2", "--reason", "placing on c1")
        long_jobs = client.submit_jobs("q", "long", [job("sleep 8", priority_class="armada-preemptible")] * 2)
        wait_for(states_are(client, long_jobs, "RUNNING"), what="the long jobs to run")
        assert {cluster for cluster, _ in runs_on(client, long_jobs).values()} == {"c1"}
        cli_ok(url, "executor-settings", "uncordon", "c2")
        cli_ok(url, "executor-settings", "cordon", "c1", "--reason", "kernel upgrade")
        listed = cli_ok(url, "executor", "list")
        assert "c1" in listed and "CORDONED: kernel upgrade" in listed
        assert set(client.job_status(long_jobs).values()) == {"RUNNING"}  # cordoning drains, never kills
        short = client.submit_jobs("q", "short", [job("sleep 0") for _ in range(4)])
        wait_for(states_are(client, short, "SUCCEEDED"), what="the short jobs to finish")
        assert {cluster for cluster, _ in runs_on(client, short).values()} == {"c2"}
        wait_for(states_are(client, long_jobs, "SUCCEEDED"), what="the long jobs to finish where they ran")
        for job_id in long_jobs:
            runs = client.job_details([job_id], expand_runs=True)[job_id].job_runs
            assert [run.cluster for run in runs] == ["c1"]
        cli_ok(url, "executor-settings", "uncordon", "c1")

        # Cordon one of c2's nodes: the executor cordons it, nothing new lands there.
        [c2] = [e for e in client.list_executors() if e.name == "c2"]
        bad = c2.nodes[0].name
        cli_ok(url, "node", "cordon", bad, "--reason", "ECC errors")
        wait_for(
            lambda: any(n.name == bad and n.unschedulable for e in client.list_executors() for n in e.nodes),
            what="the executor to report the node unschedulable",
        )
        spread = client.submit_jobs("q", "spread", [job("sleep 0") for _ in range(6)])
        wait_for(states_are(client, spread, "SUCCEEDED"), what="jobs to run around the cordoned node")
        assert bad not in {node for _, node in runs_on(client, spread).values()}

        # Preempt on a node: exactly its matching (preemptible, this queue's) jobs.
        client.create_queue(Queue(name="other"))
        # 5 schedulable nodes of 1 CPU: 10 half-CPU jobs fill them, some nodes mixing queues.
        half = job("sleep 60", cpu="500m", priority_class="armada-preemptible")
        held = client.submit_jobs("q", "held", [half] * 6)
        mine = client.submit_jobs("other", "held", [half] * 4)
        wait_for(states_are(client, [*held, *mine], "RUNNING"), what="the held jobs to run")
        placed = runs_on(client, [*held, *mine])
        # A node of c2 if it holds one of q's jobs: c1 (6 of the 10 slots) then keeps some.
        cluster, node = min((placed[j] for j in held), key=lambda where: where[0] != "c2")
        wanted = sorted(j for j in held if placed[j] == (cluster, node))
        out = cli_ok(url, "preempt", "node", node, "--executor", cluster, "--queue", "q")
        assert out.strip() == f"preemption requested for {len(wanted)} job(s)"
        wait_for(states_are(client, wanted, "PREEMPTED"), what="the node's jobs to be preempted")
        untouched = [j for j in [*held, *mine] if j not in wanted]
        assert set(client.job_status(untouched).values()) == {"RUNNING"}

        # Cancel a queue's running jobs only; empty c2; forget c1 once stopped: its jobs
        # requeue once and run on c2.
        cli_ok(url, "cancel", "queue", "other", "--state", "RUNNING")
        wait_for(states_are(client, mine, "CANCELLED"), what="the other queue's jobs to be cancelled")
        on_c1 = [j for j in untouched if placed[j][0] == "c1" and j in held]
        assert on_c1
        on_c2 = [j for j in untouched if placed[j][0] == "c2" and j in held]
        assert sorted(client.cancel_on_executor("c2")) == sorted(on_c2)  # room for c1's jobs
        first.stop()
        cli_ok(url, "executor", "forget", "c1")
        assert "c1" not in cli_ok(url, "executor", "list")
        wait_for(states_are(client, on_c1, "RUNNING", "SUCCEEDED"), what="c1's jobs to run again on c2")
        assert {cluster for cluster, _ in runs_on(client, on_c1).values()} <= {"c2"}
        for job_id in on_c1:
            runs = client.job_details([job_id], expand_runs=True)[job_id].job_runs
            assert [run.cluster for run in runs] == ["c1", "c2"]
