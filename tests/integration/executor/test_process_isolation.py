"""The process backend running jobs as another user (``executor.process.runAsUser``), with
real subprocesses: a job reads nothing of the server's, nor another run's output (issue 34)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from armada.eventstore.dialects import create_engine
from armada.executor.backends.process import ProcessBackend
from armada.executor.backends.process_state import RunDir
from armada.executor.settings import ProcessSettings
from tests.integration.executor.conftest import lease
from tests.integration.executor.recorder import Recorder

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="running jobs as another user needs root")

#: What a hostile job tries, each line saying whether it got through.
PROBE = """
id -u
for f in "$SERVER/armada.db" "$SERVER/auth.yaml" "$STATE/runs/victim/output" "$STATE/runs/victim/run"; do
  if cat "$f" >/dev/null 2>&1; then echo "read $f"; else echo "denied $f"; fi
done
if ls "$STATE/runs" >/dev/null 2>&1; then echo "listed runs"; else echo "denied runs"; fi
if (echo "exit 0" >> "$STATE/runs/probe/run") 2>/dev/null; then echo "forged record"
else echo "denied record"; fi
echo "server env [$SERVER_SECRET]"
echo mine > own-file && echo "wrote work"
exit 7
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory other users may pass through (pytest's own are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="armada-isolation-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path)


async def test_a_job_run_as_another_user_reads_nothing_of_the_server(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, state = shared_dir / "server", shared_dir / "state"
    server.mkdir(mode=0o755)
    engine = create_engine(f"sqlite:///{server / 'armada.db'}")  # as the server makes its database
    async with engine.connect() as conn:
        await conn.execute(text("create table t (secret text)"))
    await engine.dispose()
    (server / "auth.yaml").write_text("auth: {}\n")
    (server / "auth.yaml").chmod(0o600)  # what the executor demands before it starts
    monkeypatch.setenv("SERVER_SECRET", "s3cr3t")
    backend = ProcessBackend(ProcessSettings(state_dir=str(state), run_as_user="nobody"), "t", 300.0)
    recorder = Recorder()
    await backend.start(recorder)
    try:
        victim = lease("victim", argv=["sh", "-c", "echo TOP-SECRET; exit 0"])
        await backend.launch(victim)
        await recorder.wait_for(lambda: recorder.finished("victim"))
        probe = lease("probe", argv=["sh", "-c", PROBE])
        probe.pod_spec["containers"][0]["env"] = [
            {"name": "SERVER", "value": str(server)},
            {"name": "STATE", "value": str(state)},
        ]
        await backend.launch(probe)
        await recorder.wait_for(lambda: recorder.finished("probe"))
    finally:
        await backend.close()
    final = recorder.final("probe")
    assert final.exit_code == 7, final.log_tail  # the wrapper, not the job, recorded its exit
    lines = final.log_tail.splitlines()
    assert lines[0] == str(pwd.getpwnam("nobody").pw_uid)
    assert lines[1:] == [
        f"denied {server}/armada.db",
        f"denied {server}/auth.yaml",
        f"denied {state}/runs/victim/output",
        f"denied {state}/runs/victim/run",
        "denied runs",
        "denied record",
        "server env []",
        "wrote work",
    ]
    assert stat.S_IMODE((server / "armada.db").stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o711


async def test_the_root_wrapper_gets_none_of_the_jobs_environment(shared_dir: Path) -> None:
    """A job's ``LD_PRELOAD`` (or any variable) must never reach a process running as root."""
    state = shared_dir / "state"
    backend = ProcessBackend(ProcessSettings(state_dir=str(state), run_as_user="nobody"), "t", 300.0)
    recorder = Recorder()
    await backend.start(recorder)
    try:
        sleeper = lease("sleeper", argv=["sleep", "1000"])
        sleeper.pod_spec["containers"][0]["env"] = [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]
        await backend.launch(sleeper)
        await recorder.wait_for(lambda: "running" in recorder.kinds("sleeper"))
        wrapper = RunDir.of(state, "sleeper").live_pid()
        assert wrapper is not None
        assert os.stat(f"/proc/{wrapper}").st_uid == 0  # the wrapper that records the exit code
        assert Path(f"/proc/{wrapper}/environ").read_bytes() == b""  # noqa: ASYNC240 - one small read
        await backend.kill("sleeper")
    finally:
        await backend.close()


async def test_without_a_run_as_user_the_state_directory_is_private(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    backend = ProcessBackend(ProcessSettings(state_dir=str(state)), "t", 300.0)
    recorder = Recorder()
    await backend.start(recorder)
    try:
        await backend.launch(lease("r1", argv=["echo", "secret"]))
        await recorder.wait_for(lambda: recorder.finished("r1"))
    finally:
        await backend.close()
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for name in ("run", "output"):
        assert stat.S_IMODE((state / "runs" / "r1" / name).stat().st_mode) == 0o600
