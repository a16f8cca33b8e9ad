"""``armada executor`` as a real process: options, leasing, and a graceful SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from armada.cli.executor import settings_from_options
from armada.executor.backends.process_state import RunDir
from tests.integration.executor.conftest import lease
from tests.integration.executor.contract_server import ContractServer

REPO = Path(__file__).resolve().parents[3]
LAUNCHER = "import typer; from armada.cli.executor import executor; typer.run(executor)"


async def start_executor(
    server: ContractServer, cluster_id: str, *options: str, output: int = asyncio.subprocess.DEVNULL
) -> asyncio.subprocess.Process:
    """``armada executor`` of ``server`` as a child process; its stdout and stderr go to ``output``."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LAUNCHER,
        "--server",
        server.url,
        "--cluster-id",
        cluster_id,
        *options,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        stdout=output,
        stderr=asyncio.subprocess.STDOUT,
    )


async def test_executor_process_leases_and_stops_on_sigterm(server: ContractServer) -> None:
    server.offer(lease("r1", argv=["sleep", "0"]))
    options = ["--backend", "fake", "--fake-nodes", "3", "--token", "t0k"]
    process = await start_executor(server, "cli-cluster", *options, output=asyncio.subprocess.PIPE)
    try:
        await server.wait_for(lambda: "succeeded" in server.kinds("r1"), within=60)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = await process.communicate()
    assert process.returncode == 0, output.decode()
    assert b"executor stopped" in output
    assert server.lease_requests[0].executor_id == "cli-cluster"
    assert len(server.lease_requests[0].nodes) == 3
    assert "Bearer t0k" in server.auth_headers


async def test_one_process_serves_several_clusters_and_stops_them_all_on_sigterm(
    server: ContractServer,
) -> None:
    options = ["--backend", "fake", "--fake-nodes", "2", "--clusters", "3"]
    process = await start_executor(server, "fleet", *options, output=asyncio.subprocess.PIPE)
    expected = {"fleet-0", "fleet-1", "fleet-2"}
    try:
        await server.wait_for(lambda: {r.executor_id for r in server.lease_requests} >= expected, within=60)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = await process.communicate()
    assert process.returncode == 0, output.decode()
    assert output.count(b"executor stopped") == 3
    assert {r.executor_id for r in server.lease_requests} == expected
    assert {len(r.nodes) for r in server.lease_requests if r.nodes is not None} == {2}


async def test_a_cluster_id_kubernetes_refuses_as_a_label_value_stops_the_executor(
    server: ContractServer,
) -> None:
    process = await start_executor(server, "cluster-a-", "--backend", "fake", output=asyncio.subprocess.PIPE)
    output, _ = await process.communicate()
    assert process.returncode == 2, output.decode()
    assert b"error: clusterId: 'cluster-a-' must be 1 to 63 letters" in output
    assert not server.lease_requests


def test_options_become_settings(tmp_path: Path) -> None:
    settings = settings_from_options(
        server="https://armada:8080",
        cluster_id="c1",
        backend="process",
        ca_cert=tmp_path / "ca.pem",
        kubeconfig=tmp_path / "kube",
        process_cpu="2",
        process_memory="4Gi",
        fake_nodes=7,
    )
    assert (settings.server_url, settings.cluster_id, settings.pool, settings.backend) == (
        "https://armada:8080",
        "c1",
        "default",
        "process",
    )
    assert settings.ca_cert == str(tmp_path / "ca.pem")
    assert settings.kubernetes.kubeconfig == str(tmp_path / "kube")
    assert (settings.process.cpu, settings.process.memory, settings.fake.nodes) == ("2", "4Gi", 7)


async def test_sigkilled_executor_cleans_up_stale_runs_when_it_returns(
    server: ContractServer, tmp_path: Path
) -> None:
    """Runs survive an executor SIGKILL; the restarted one kills those the server expired."""
    state = tmp_path / "state"
    server.offer(lease("stale", argv=["sleep", "1000"]), lease("live", argv=["sleep", "1000"]))
    crashy = ["--backend", "process", "--process-state-dir", str(state)]
    first = await start_executor(server, "crashy", *crashy)
    await server.wait_for(lambda: "running" in server.kinds("stale") and "running" in server.kinds("live"))
    first.kill()
    await first.wait()
    pids = {run: RunDir.of(state, run).live_pid() or 0 for run in ("stale", "live")}
    for pid in pids.values():
        os.kill(pid, 0)  # still running without their executor
    del server.active["stale"]
    second = await start_executor(server, "crashy", *crashy)
    try:
        seen = len(server.lease_requests)
        await server.wait_for(
            lambda: "stale" not in server.reported() and len(server.lease_requests) > seen + 1
        )
        assert "live" in server.reported()
        server.cancel.add("live")
        await server.wait_for(lambda: not server.reported())
    finally:
        second.send_signal(signal.SIGTERM)
        await second.wait()
    assert server.kinds("stale") == ["pending", "running"]
    assert not (state / "runs" / "stale").exists()
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
