"""Logs end to end: ``armada serve`` and ``armada executor --backend process`` as separate
processes, the user's ``armada logs`` as a third, and armada-client's Binoculars stub."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from armada_client.internal.binoculars_client import BinocularsClient

from armada.client import ArmadaApiError, ArmadaClient, ClientConfig
from armada.executor.backends.process_state import run_dirs
from armada.model.queues import Queue
from armada.model.wire.logs import LogRequest
from tests.e2e.cluster import FAST_SERVER_ENV, executor, job, states_are, wait_for
from tests.e2e.grpc_servers import basic, metadata_channel, serve_with_grpc
from tests.processes import ROOT, ArmadaProcess, armada_command, process_env, wait_until_healthy

LOG_WAIT = 3
#: A line a second: long enough to be read while it runs.
TICKS = "for i in 1 2 3 4 5 6; do echo tick-$i; sleep 1; done"


class System:
    def __init__(self, url: str, grpc_address: str, executor: ArmadaProcess, queue: str) -> None:
        self.url, self.grpc_address, self.executor, self.queue = url, grpc_address, executor, queue

    def client(self, user: str) -> ArmadaClient:
        return ArmadaClient(ClientConfig(armada_url=self.url, username=user, password=f"{user}-pass"))

    def submit(self, command: str) -> str:
        with self.client("alice") as alice:
            [job_id] = alice.submit_jobs(self.queue, "logs", [job(command, cpu="100m")])
        return job_id

    def logs(self, *args: str, **popen: Any) -> subprocess.Popen[str]:
        """``armada logs ARGS`` as alice, its output piped."""
        command = armada_command("--username", "alice", "--password", "alice-pass", "logs", *args)
        env = process_env({"ARMADA_URL": self.url})
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True, **popen)


def lines_of(client: ArmadaClient, job_id: str) -> list[str]:
    return [line.line for line in client.job_logs(LogRequest(job_id=job_id))]


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    workdir = tmp_path_factory.mktemp("logs")
    env = {**FAST_SERVER_ENV, "ARMADA_SCHEDULER_LOG_WAIT_SECONDS": str(LOG_WAIT)}
    server, port, grpc_port = serve_with_grpc(workdir, f"sqlite:///{workdir / 'armada.db'}", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, server)
        state = json.dumps({"stateDir": str(workdir / "runs")})
        with executor(
            workdir,
            url,
            "cluster-a",
            backend="process",
            env={
                "ARMADA_TOKEN": "executor-token",
                "ARMADA_EXECUTOR_PROCESS": state,
            },
        ) as running:
            system = System(url, f"127.0.0.1:{grpc_port}", running, "team-a-logs")
            with system.client("admin") as admin:
                admin.create_queue(Queue(name=system.queue, group_owners=["team-a"]))
            yield system
    finally:
        server.stop()
        _kill_leftover_runs(workdir / "runs")


def _kill_leftover_runs(state_dir: Path) -> None:
    """The last test stops the executor under a running job: end that job's process group."""
    for run in run_dirs(state_dir):
        pid = run.live_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def test_follow_shows_lines_while_the_job_runs_and_all_of_them_after(system: System) -> None:
    job_id = system.submit(TICKS)
    follower = system.logs(job_id, "--follow", "--interval", "0.5")
    assert follower.stdout is not None
    first = follower.stdout.readline()
    with system.client("alice") as alice:
        state_at_first_line = alice.job_status([job_id])[job_id]
    rest, _ = follower.communicate(timeout=60)
    assert first == "tick-1\n"
    assert state_at_first_line == "RUNNING"
    assert [first.strip(), *rest.split()] == [f"tick-{i}" for i in range(1, 7)]
    assert follower.returncode == 0


def test_a_finished_jobs_log_over_the_cli_and_grpc(system: System) -> None:
    job_id = system.submit("echo one; echo two; echo three >&2")
    with system.client("alice") as alice:
        wait_for(states_are(alice, [job_id], "SUCCEEDED"), what="the job to succeed")
    printed = system.logs(job_id)
    assert printed.communicate(timeout=60)[0] == "one\ntwo\nthree\n"
    assert printed.returncode == 0
    tail, _ = system.logs(job_id, "--tail", "1", "--timestamps").communicate(timeout=60)
    stamp, _, line = tail.strip().partition(" ")
    assert line == "three" and stamp.endswith("Z"), tail

    channel = metadata_channel(system.grpc_address, basic("alice"))
    answer = BinocularsClient(channel).logs(job_id, since_time="")
    assert [line.line for line in answer.log] == ["one", "two", "three"]
    assert all(line.timestamp for line in answer.log)
    bob = BinocularsClient(metadata_channel(system.grpc_address, basic("bob")))
    with pytest.raises(grpc.RpcError) as refused:
        bob.logs(job_id, since_time="")
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


def test_another_team_cannot_read_the_log(system: System) -> None:
    """bob may not watch team-a's queue: the job reads as one that does not exist."""
    job_id = system.submit("echo secret")
    with system.client("bob") as bob, pytest.raises(ArmadaApiError) as refused:
        lines_of(bob, job_id)
    assert (refused.value.status, refused.value.field) == (404, "jobId")


def test_binoculars_cordon_over_grpc(system: System) -> None:
    """Upstream's ``Binoculars/Cordon`` cordons the node as ``POST /v1/binoculars/cordon``
    does: the executor reports it unschedulable; it needs ``cordon_nodes``."""
    with system.client("admin") as admin:
        [node] = [n.name for e in admin.list_executors() for n in e.nodes]
        alice = BinocularsClient(metadata_channel(system.grpc_address, basic("alice")))
        with pytest.raises(grpc.RpcError) as refused:
            alice.cordon(node)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        operator = BinocularsClient(metadata_channel(system.grpc_address, basic("admin")))
        with pytest.raises(grpc.RpcError) as unknown:
            operator.cordon("no-such-node")
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        try:
            operator.cordon(node)
            wait_for(
                lambda: all(n.cordoned and n.unschedulable for e in admin.list_executors() for n in e.nodes),
                what="the executor to cordon its node",
            )
        finally:
            admin.cordon_node(node, cordoned=False)
        wait_for(
            lambda: not any(n.unschedulable for e in admin.list_executors() for n in e.nodes),
            what="the node to be uncordoned",
        )


def test_a_vanished_executor_is_a_clear_503_within_the_bound(system: System) -> None:
    job_id = system.submit("echo before; sleep 120")
    with system.client("alice") as alice:
        wait_for(states_are(alice, [job_id], "RUNNING"), what="the job to run")
        wait_for(lambda: lines_of(alice, job_id) == ["before"], what="the first line")
        system.executor.stop()
        started = time.monotonic()
        with pytest.raises(ArmadaApiError) as gone:
            lines_of(alice, job_id)
        waited = time.monotonic() - started
    assert gone.value.status == 503
    assert "executor cluster-a" in gone.value.detail, gone.value.detail
    print(f"answered 503 after {waited:.1f} s (bound {LOG_WAIT} s)")
