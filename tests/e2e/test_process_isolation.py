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


def refused(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``armada ARGS`` expecting it to refuse at once (a started server would time out)."""
    command = armada_command(*args)
    return subprocess.run(
        command, cwd=cwd, env=process_env(env), capture_output=True, text=True, timeout=60, check=False
    )


def test_a_settings_file_the_run_as_user_could_read_is_refused(server_dir: Path) -> None:
    config = server_dir / "armada.yaml"
    config.chmod(0o644)
    result = refused(server_dir, "serve", "--dev", "--port", str(free_port()), "--config", str(config))
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


def test_secrets_on_the_command_line_are_refused(server_dir: Path) -> None:
    """Every user reads every process's command line in ``/proc``: a job too."""
    config = str(server_dir / "armada.yaml")
    (server_dir / "armada.yaml").chmod(0o600)
    url = "postgresql+psycopg://armada:hunter2@127.0.0.1:5432/armada"
    result = refused(server_dir, "serve", "--dev", "--config", config, "--database-url", url)
    assert result.returncode == 2, result.stderr
    assert "--database-url holds a secret on the command line" in result.stderr
    executor = ("executor", "--backend", "process", "--config", config, "--server", "http://192.0.2.10:1")
    result = refused(server_dir, *executor, "--token", "s3cr3t")
    assert result.returncode == 2, result.stderr
    assert "--token holds a secret on the command line" in result.stderr
    # From the environment it is no refusal (this one still refuses the address, so it exits).
    result = refused(server_dir, *executor, env={"ARMADA_TOKEN": "s3cr3t"})
    assert result.returncode == 2 and "allowRemoteSubmitters" in result.stderr, result.stderr
    assert "--token" not in result.stderr
