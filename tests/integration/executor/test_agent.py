"""The agent against an in-test HTTP server speaking the executor contract."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from armada.client.executor_api import ExecutorApiClient
from armada.executor.agent import ExecutorAgent
from armada.executor.backends.fake import FakeBackend
from armada.executor.backends.process_state import RunDir
from armada.executor.runner import run_executor
from armada.executor.settings import FakeSettings, ProcessSettings
from armada.model.leases import LogOrder
from armada.model.wire.logs import LogLine
from tests.integration.executor.conftest import RunningExecutor, fast_settings, lease
from tests.integration.executor.contract_server import ContractServer


def fake(**kw: object) -> FakeBackend:
    return FakeBackend(FakeSettings(nodes=2, **kw), "test-cluster")  # type: ignore[arg-type]


async def test_leases_run_to_completion_with_events(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(lease("r1", argv=["sleep", "0"]), lease("r2", argv=["sh", "-c", "sleep 0; exit 3"]))
    async with executor(cluster=fake()):
        await server.wait_for(lambda: {"r1", "r2"} <= {e.run_id for e in server.events.values()})
        await server.wait_for(lambda: len(server.lease_requests) > 1 and not server.reported())
    assert server.kinds("r1") == ["pending", "running", "succeeded"]
    assert server.kinds("r2") == ["pending", "running", "failed"]
    failed = next(e for e in server.events.values() if e.kind == "failed")
    assert (failed.exit_code, failed.cause) == (3, "Error")
    first = server.lease_requests[0]
    assert first.executor_id == "test-cluster"
    assert [n.name for n in first.nodes] == ["test-cluster-node-0", "test-cluster-node-1"]


async def test_nodes_are_sent_when_changed_or_wanted(
    server: ContractServer, executor: RunningExecutor
) -> None:
    async with executor(cluster=fake()):
        await server.wait_for(lambda: len(server.lease_requests) > 2)
        assert [r.nodes is None for r in server.lease_requests[:3]] == [False, True, True]
        server.forget_nodes = True
        seen = len(server.lease_requests)
        await server.wait_for(lambda: len(server.lease_requests) > seen + 1)
    resent = [r.nodes for r in server.lease_requests[seen:] if r.nodes is not None]
    assert [len(nodes) for nodes in resent] == [2], "a server that lost the nodes gets them once"


async def test_held_runs_are_sent_as_changes_and_whole_again_when_the_server_lost_them(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(*(lease(f"r{i}", argv=["sleep", "1000"]) for i in range(4)))
    async with executor(cluster=fake()):
        await server.wait_for(lambda: all("running" in server.kinds(f"r{i}") for i in range(4)))
        server.offer(lease("r4", argv=["sleep", "1000"]))
        await server.wait_for(lambda: "r4" in server.reported())
        server.cancel.add("r0")
        await server.wait_for(lambda: "r0" not in server.reported())
        seen = len(server.lease_requests)
        server.forget_held_runs()
        await server.wait_for(lambda: len(server.lease_requests) > seen + 2)
        assert server.reported() == {"r1", "r2", "r3", "r4"}
    changes = [r for r in server.lease_requests[:seen] if r.runs_base]
    assert len(changes) > seen / 2, "most calls send only the change"
    assert any("r4" in r.runs for r in changes) and any("r0" in r.runs_gone for r in changes)
    after = server.lease_requests[seen:]
    assert after[0].runs_base and not after[1].runs_base, "the next call after runsWanted is whole"
    assert len(after[1].runs) == 4 and after[2].runs_base == after[1].report_id


async def test_repeated_lease_starts_one_run(server: ContractServer, executor: RunningExecutor) -> None:
    server.offer(lease("r1", argv=["sleep", "1000"]))
    async with executor(cluster=fake()):
        await server.wait_for(lambda: "running" in server.kinds("r1"))
        server.offer(lease("r1", argv=["sleep", "1000"]))
        await server.wait_for(lambda: not server.queued)
        server.cancel.add("r1")
        await server.wait_for(lambda: len(server.lease_requests) > 3 and "r1" not in server.reported())
    assert server.kinds("r1") == ["pending", "running"]


async def test_cancel_kills_and_never_reports_a_result(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(lease("r1", argv=["sleep", "1000"]), lease("r2", argv=["sleep", "1000"]))
    async with executor(cluster=fake()):
        await server.wait_for(lambda: "running" in server.kinds("r1") and "running" in server.kinds("r2"))
        server.cancel.add("r1")
        server.preempt.add("r2")
        await server.wait_for(lambda: not server.reported() & {"r1", "r2"})
    assert server.kinds("r1") == ["pending", "running"]
    assert server.kinds("r2") == ["pending", "running"]
    phases = {req.runs["r1"] for req in server.lease_requests if "r1" in req.runs}
    assert "terminating" in phases or phases <= {"leased", "pending", "running"}


async def test_stale_runs_the_server_forgot_are_killed(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.offer(lease("r1", argv=["sleep", "1000"]))
    async with executor(cluster=fake()):
        await server.wait_for(lambda: "running" in server.kinds("r1"))
        del server.active["r1"]
        await server.wait_for(lambda: len(server.lease_requests) > 2 and "r1" not in server.reported())
    assert server.kinds("r1") == ["pending", "running"]


async def test_events_survive_an_outage_and_keep_their_ids(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.fail_events_before = 3
    server.fail_events_after = 2
    server.offer(*(lease(f"r{i}", argv=["sleep", "0"]) for i in range(20)))
    async with executor(cluster=fake()):
        await server.wait_for(lambda: sum(e.kind == "succeeded" for e in server.events.values()) == 20)
        await server.wait_for(lambda: len(server.lease_requests) > 1 and not server.reported())
        await server.stop()
        server.offer(*(lease(f"s{i}", argv=["sleep", "0"]) for i in range(5)))
        await server.start()
        await server.wait_for(lambda: sum(e.kind == "succeeded" for e in server.events.values()) == 25)
    for i in range(20):
        assert server.kinds(f"r{i}") == ["pending", "running", "succeeded"]
    assert server.deliveries > 1


async def test_bearer_token_is_sent(server: ContractServer, executor: RunningExecutor) -> None:
    async with executor(cluster=fake(), token="s3cret"):
        await server.wait_for(lambda: len(server.lease_requests) > 0)
    assert "Bearer s3cret" in server.auth_headers


async def test_restarted_executor_cleans_stale_runs_and_keeps_live_ones(
    server: ContractServer, executor: RunningExecutor, tmp_path: Path
) -> None:
    """A run the server expired while the executor was down is never reported as succeeded."""
    go = tmp_path / "go"
    wait_then_succeed = ["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done"]
    server.offer(lease("stale", argv=wait_then_succeed), lease("live", argv=wait_then_succeed))
    process = {"backend": "process", "process": ProcessSettings(state_dir=str(tmp_path / "state"))}
    async with executor(**process):
        await server.wait_for(
            lambda: "running" in server.kinds("stale") and "running" in server.kinds("live")
        )
    del server.active["stale"]
    go.touch()
    runs = [RunDir.of(tmp_path / "state", run) for run in ("stale", "live")]
    while any(run.exit_code() is None for run in runs):  # noqa: ASYNC110 - written by the processes
        await asyncio.sleep(0.05)
    async with executor(**process):
        await server.wait_for(lambda: "succeeded" in server.kinds("live"))
        await server.wait_for(lambda: len(server.lease_requests) > 4 and not server.reported())
    assert server.kinds("stale") == ["pending", "running"]
    assert server.kinds("live") == ["pending", "running", "succeeded"]
    assert not (tmp_path / "state" / "runs" / "stale").exists()


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, made with the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *subject, *files],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


async def test_tls_server_verified_with_ca_cert(self_signed: tuple[str, str]) -> None:
    tls_server = ContractServer(tls=self_signed)
    await tls_server.start()
    try:
        settings = fast_settings(tls_server, ca_cert=self_signed[0])
        task = asyncio.create_task(run_executor(settings, backend=fake()))
        await tls_server.wait_for(lambda: len(tls_server.lease_requests) > 0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        await tls_server.stop()
    assert tls_server.url.startswith("https://")


async def test_no_new_leases_while_events_cannot_be_delivered(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.fail_events_before = 10**9
    server.offer(*(lease(f"r{i}", argv=["sleep", "0"]) for i in range(3)))
    async with executor(cluster=fake(), max_buffered_events=2, event_batch_size=1):
        await server.wait_for(
            lambda: server.lease_requests[-1].max_new_leases == 0 if server.lease_requests else False
        )
        server.fail_events_before = 0
        await server.wait_for(lambda: all("succeeded" in server.kinds(f"r{i}") for i in range(3)))
        await server.wait_for(lambda: server.lease_requests[-1].max_new_leases > 0)


async def test_leased_runs_limit_caps_new_leases(server: ContractServer, executor: RunningExecutor) -> None:
    server.offer(*(lease(f"r{i}", argv=["sleep", "1000"]) for i in range(5)))
    async with executor(cluster=fake(), max_leased_runs=3, max_new_leases=100):
        await server.wait_for(lambda: all("running" in server.kinds(f"r{i}") for i in range(5)))
    assert server.lease_requests[0].max_new_leases == 3


async def test_run_finishing_during_a_partition_is_reported_once_after_it(
    server: ContractServer, executor: RunningExecutor, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    server.offer(lease("r1", argv=["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; exit 5"]))
    state = tmp_path / "state"
    async with executor(backend="process", process=ProcessSettings(state_dir=str(state))):
        await server.wait_for(lambda: "running" in server.kinds("r1"))
        await server.stop()
        go.touch()
        while RunDir.of(state, "r1").exit_code() is None:  # noqa: ASYNC110 - written by the job
            await asyncio.sleep(0.05)
        server.fail_events_after = 1  # the first delivery after the partition is "lost" on the way back
        await server.start()
        await server.wait_for(lambda: "failed" in server.kinds("r1"))
        await server.wait_for(lambda: "r1" not in server.reported() and server.fail_events_after == 0)
    assert server.kinds("r1") == ["pending", "running", "failed"]
    failed = [e for e in server.events.values() if e.kind == "failed"]
    assert len(failed) == 1 and failed[0].exit_code == 5


async def test_leases_beyond_the_budget_are_left_for_the_server_to_resend(
    server: ContractServer, executor: RunningExecutor
) -> None:
    server.greedy = True
    server.offer(*(lease(f"r{i}", argv=["sleep", "1000"]) for i in range(5)))
    async with executor(cluster=fake(), max_leased_runs=2, max_new_leases=2):
        await server.wait_for(lambda: all("running" in server.kinds(f"r{i}") for i in range(5)))
        assert max(server.held_counts[:2]) <= 2


async def test_on_synced_is_called_once_when_the_cluster_is_first_loaded(server: ContractServer) -> None:
    """``armada executor`` freezes what start-up loaded (gc.freeze) through this hook."""
    calls: list[int] = []
    async with ExecutorApiClient(server.url) as client:
        agent = ExecutorAgent(
            fast_settings(server), fake(), client, on_synced=lambda: calls.append(len(server.lease_requests))
        )
        running = asyncio.create_task(agent.run())
        await server.wait_for(lambda: len(server.lease_requests) > 2)
        agent.stop()
        await running
    assert calls == [0], "once, before the first lease call"


class SlowLogs(FakeBackend):
    """Log reads that wait until the test lets them finish, counting how many run at once."""

    def __init__(self) -> None:
        super().__init__(FakeSettings(nodes=1), "test-cluster")
        self.release = asyncio.Event()
        self.reading = 0
        self.most_reading = 0

    async def read_log(self, order: LogOrder) -> list[LogLine]:
        self.reading += 1
        self.most_reading = max(self.most_reading, self.reading)
        try:
            await self.release.wait()
        finally:
            self.reading -= 1
        return [LogLine(line=order.request_id)]


async def test_log_reads_past_the_limit_are_answered_busy_at_once(
    server: ContractServer, executor: RunningExecutor
) -> None:
    """Eight log requests in one lease answer, ``maxLogReads`` 3: three are read (at most
    three at once), five are answered busy without reading, before any read finishes."""
    backend = SlowLogs()
    server.log_orders = [LogOrder(request_id=f"q{i}", run_id="r1", job_id="j1") for i in range(8)]
    async with executor(cluster=backend, max_log_reads=3):
        await server.wait_for(lambda: len(server.log_answers) == 5)
        assert all(answer.busy and not answer.lines for answer in server.log_answers.values())
        assert backend.reading == 3
        backend.release.set()
        await server.wait_for(lambda: len(server.log_answers) == 8)
    read = {r: a for r, a in server.log_answers.items() if not a.busy}
    assert sorted(read) == ["q0", "q1", "q2"]
    assert [a.lines for a in read.values()] == [[LogLine(line=r)] for r in read]
    assert backend.most_reading == 3
