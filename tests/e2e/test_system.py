"""The whole system over HTTP: a real server, real executors, jobs from submission to the end."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model import events as ev
from armada.model.queues import Queue
from tests.databases import SQLITE_ONLY
from tests.e2e.cluster import (
    FAST_SERVER_ENV,
    event_types,
    executor,
    fake_nodes,
    gang,
    job,
    states_are,
    wait_for,
)
from tests.processes import Serve, Server

pytestmark = SQLITE_ONLY


@pytest.fixture(scope="module")
def serve() -> Serve:
    return Serve(env=FAST_SERVER_ENV)


@pytest.fixture
def client(fresh_server: Server) -> Iterator[ArmadaClient]:
    """A client of the test's own server (executors and nodes a test leaves behind would take
    the next test's jobs until they time out), with queue ``q``."""
    with ArmadaClient(fresh_server.url) as armada:
        armada.create_queue(Queue(name="q"))
        yield armada


def test_jobs_run_as_local_processes_and_report_success_and_failure(
    tmp_path: Path, fresh_server: Server, client: ArmadaClient
) -> None:
    with executor(tmp_path, fresh_server.url, "local", backend="process", args=("--process-cpu", "4")):
        ok, bad = client.submit_jobs("q", "set", [job("echo hello"), job("echo doomed >&2; exit 3")])
        wait_for(states_are(client, [ok, bad], "SUCCEEDED", "FAILED"), what="both jobs to finish")
        assert client.job_status([ok, bad]) == {ok: "SUCCEEDED", bad: "FAILED"}
        assert event_types(client, "q", "set", ok) == [
            "submitted",
            "queued",
            "leased",
            "pending",
            "running",
            "succeeded",
        ]
        [failed] = [e.event for e in client.job_set_events("q", "set") if e.event.type == "failed"]
        assert isinstance(failed, ev.JobFailed)
        assert failed.exit_code == 3
        assert "doomed" in failed.log_tail


def test_cancel_queued_and_running_jobs(tmp_path: Path, fresh_server: Server, client: ArmadaClient) -> None:
    with executor(tmp_path, fresh_server.url, "c1", args=fake_nodes(1)):
        running, waiting = client.submit_jobs("q", "set", [job("sleep 600"), job("sleep 600")])
        wait_for(lambda: "RUNNING" in client.job_status([running, waiting]).values(), what="one job running")
        assert sorted(client.job_status([running, waiting]).values()) == ["QUEUED", "RUNNING"]
        client.cancel_jobs("q", "set", [running, waiting], reason="changed my mind")
        wait_for(states_are(client, [running, waiting], "CANCELLED"), what="both cancelled")
        started = running if "running" in event_types(client, "q", "set", running) else waiting
        assert event_types(client, "q", "set", started)[-2:] == ["cancelling", "cancelled"]


def test_preempt_and_reprioritize(tmp_path: Path, fresh_server: Server, client: ArmadaClient) -> None:
    with executor(tmp_path, fresh_server.url, "c1", args=fake_nodes(1)):
        [victim] = client.submit_jobs("q", "set", [job("sleep 600", priority_class="armada-preemptible")])
        wait_for(states_are(client, [victim], "RUNNING"), what="the job to run")
        [later] = client.submit_jobs("q", "set", [job("sleep 600")])
        assert client.reprioritize_jobs("q", "set", [later], 5.0) == {later: ""}
        client.preempt_jobs("q", "set", [victim], reason="make room")
        wait_for(states_are(client, [victim], "PREEMPTED"), what="the preemption")
        assert event_types(client, "q", "set", victim)[-2:] == ["preempting", "preempted"]
        assert "reprioritized" in event_types(client, "q", "set", later)
        wait_for(states_are(client, [later], "RUNNING"), what="the waiting job to take the node")


def test_two_executors_share_the_work(tmp_path: Path, fresh_server: Server, client: ArmadaClient) -> None:
    with (
        executor(tmp_path, fresh_server.url, "alpha", pool="pool-a", args=fake_nodes(1)),
        executor(tmp_path, fresh_server.url, "beta", pool="pool-b", args=fake_nodes(1)),
    ):
        ids = client.submit_jobs("q", "set", [job("sleep 2"), job("sleep 2")])
        wait_for(states_are(client, ids, "SUCCEEDED"), what="both jobs to succeed")
        leased = [e.event for e in client.job_set_events("q", "set") if isinstance(e.event, ev.JobLeased)]
        assert {(event.cluster_id, event.pool) for event in leased} == {
            ("alpha", "pool-a"),
            ("beta", "pool-b"),
        }


def test_killed_executor_loses_its_runs_to_another(
    tmp_path: Path, fresh_server: Server, client: ArmadaClient
) -> None:
    with executor(tmp_path, fresh_server.url, "doomed", args=fake_nodes(2)) as doomed:
        ids = client.submit_jobs("q", "set", [job("sleep 5"), job("sleep 5")])
        wait_for(states_are(client, ids, "RUNNING"), what="jobs running on the doomed executor")
        doomed.signal(signal.SIGKILL)
        doomed.wait(10)
        with executor(tmp_path, fresh_server.url, "survivor", args=fake_nodes(2)):
            wait_for(states_are(client, ids, "SUCCEEDED"), timeout=90, what="jobs to finish elsewhere")
    for job_id in ids:
        types = event_types(client, "q", "set", job_id)
        assert "leaseExpired" in types
        assert types[-1] == "succeeded"
    clusters = [
        e.event.cluster_id for e in client.job_set_events("q", "set") if isinstance(e.event, ev.JobLeased)
    ]
    assert Counter(clusters) == {"doomed": 2, "survivor": 2}


def test_a_gang_of_four_is_leased_together(
    tmp_path: Path, fresh_server: Server, client: ArmadaClient
) -> None:
    with executor(tmp_path, fresh_server.url, "c1", args=fake_nodes(4)):
        ids = client.submit_jobs("q", "gang", gang(4, "sleep 1", "training"))
        wait_for(states_are(client, ids, "SUCCEEDED"), what="the gang to finish")
        leased = [int(e.message_id) for e in client.job_set_events("q", "gang") if e.event.type == "leased"]
        assert len(leased) == 4
        assert leased == list(range(leased[0], leased[0] + 4))  # one transaction, one cycle


def test_seed_scenario_shares_follow_priority_factors(
    tmp_path: Path, fresh_server: Server, client: ArmadaClient
) -> None:
    """100 slots, queue A factor 2.0 and B 1.0 with deep demand: A gets about 67, B about 33."""
    client.create_queue(Queue(name="team-a", priority_factor=2.0))
    client.create_queue(Queue(name="team-b", priority_factor=1.0))
    client.submit_jobs("team-a", "work", [job("sleep 600", priority_class="armada-preemptible")] * 150)
    client.submit_jobs("team-b", "work", [job("sleep 600", priority_class="armada-preemptible")] * 150)
    with executor(tmp_path, fresh_server.url, "gpu-cluster", args=fake_nodes(10, cpu="10", memory="64Gi")):

        def shares() -> Counter[str] | None:
            running = Counter[str]()
            for queue in ("team-a", "team-b"):
                for message in client.job_set_events(queue, "work"):
                    if message.event.type == "running":
                        running[queue] += 1
                    elif message.event.type in ("preempted", "failed", "cancelled"):
                        running[queue] -= 1
            return running if sum(running.values()) == 100 else None

        running = wait_for(shares, timeout=90, what="the cluster to fill")
        assert 63 <= running["team-a"] <= 70
        assert running["team-a"] + running["team-b"] == 100
