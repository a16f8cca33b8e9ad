"""A real ``armada serve --dev`` as root running its jobs as ``executor.process.runAsUser``
(issue 34): a submitted job reads neither the server's database nor its settings, and a
server whose settings that user could read refuses to start."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from armada.client import ArmadaClient, ClientConfig
from armada.model.queues import Queue
from armada.model.wire.logs import LogRequest
from tests.e2e.cluster import FAST_SERVER_ENV, job, states_are, wait_for
from tests.processes import ArmadaProcess, armada_command, free_port, process_env, wait_until_healthy

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="running jobs as another user needs root")

PROBE = (
    'id -u; for f in armada.db armada.yaml; do if cat "$SERVER/$f" >/dev/null 2>&1; '
    'then echo "read $f"; else echo "denied $f"; fi; done; exit 7'
)


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """The server's working directory, passable by others (pytest's own are 0700), so that
    only the files' own modes are in the way."""
    path = Path(tempfile.mkdtemp(prefix="armada-run-as-"))
    path.chmod(0o711)
    (path / "armada.yaml").write_text("executor:\n  process: {runAsUser: nobody}\n")
    yield path
    shutil.rmtree(path)


def test_a_settings_file_the_run_as_user_could_read_is_refused(server_dir: Path) -> None:
    config = server_dir / "armada.yaml"
    config.chmod(0o644)
    command = armada_command("serve", "--dev", "--port", str(free_port()), "--config", str(config))
    result = subprocess.run(
        command, cwd=server_dir, env=process_env(), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result.stderr
    assert f"{config} is readable by executor.process.runAsUser 'nobody'" in result.stderr
    assert not (server_dir / "armada.db").exists()


def test_a_job_run_as_another_user_reads_neither_database_nor_settings(server_dir: Path) -> None:
    config = server_dir / "armada.yaml"
    config.chmod(0o600)
    port = free_port()
    state = Path(tempfile.gettempdir()) / f"armada-dev-{port}"
    process = ArmadaProcess(
        ["serve", "--dev", "--port", str(port), "--config", str(config)],
        cwd=server_dir,
        log_path=server_dir / "serve.log",
        env={**FAST_SERVER_ENV, "ARMADA_DATABASE_URL": "sqlite:///armada.db"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process)
        with ArmadaClient(ClientConfig(armada_url=url)) as client:
            client.create_queue(Queue(name="q"))
            probe = job(f"SERVER={server_dir}; {PROBE}", cpu="100m")
            [job_id] = client.submit_jobs("q", "set", [probe])
            wait_for(states_are(client, [job_id], "FAILED"), what="the probe to fail")
            error = client.job_errors([job_id])[job_id]
            output = [line.line for line in client.job_logs(LogRequest(job_id=job_id))]
    finally:
        process.stop()
        shutil.rmtree(state, ignore_errors=True)
    assert "exit code 7" in error, error
    assert output == [str(pwd.getpwnam("nobody").pw_uid), "denied armada.db", "denied armada.yaml"]
