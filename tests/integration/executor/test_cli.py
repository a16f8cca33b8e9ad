"""``armada executor`` as a real process: options, leasing, and a graceful SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from armada.executor.cli import settings_from_options
from tests.integration.executor.conftest import lease
from tests.integration.executor.contract_server import ContractServer

REPO = Path(__file__).resolve().parents[3]
LAUNCHER = "import typer; from armada.executor.cli import executor; typer.run(executor)"


async def test_executor_process_leases_and_stops_on_sigterm(server: ContractServer) -> None:
    server.offer(lease("r1", argv=["sleep", "0"]))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LAUNCHER,
        "--server",
        server.url,
        "--cluster-id",
        "cli-cluster",
        "--backend",
        "fake",
        "--fake-nodes",
        "3",
        "--token",
        "t0k",
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
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
