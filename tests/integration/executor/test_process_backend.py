"""The process backend with real subprocesses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from armada.executor.backends.process import ProcessBackend
from armada.executor.backends.process_state import RunDir
from armada.model.ingress import ServiceConfig
from armada.model.leases import LOG_TAIL_BYTES, Lease
from tests.integration.executor.backends import make_backend
from tests.integration.executor.conftest import lease
from tests.integration.executor.recorder import Recorder


@pytest.fixture
async def started(tmp_path: Path) -> AsyncIterator[tuple[ProcessBackend, Recorder]]:
    backend, recorder = make_backend(tmp_path), Recorder()
    assert await backend.discover() == []
    await backend.start(recorder)
    yield backend, recorder
    for run_id in {s.run_id for s in recorder.statuses}:
        await backend.kill(run_id)
    await backend.close()


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is in process group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            return True
    return False


async def test_node_report_uses_settings(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, _ = started
    [node] = await backend.nodes()
    assert (node.name, node.allocatable) == ("local", {"cpu": "4", "memory": "8Gi"})
    assert node.labels["kubernetes.io/hostname"] == "local"


@pytest.mark.parametrize(
    ("argv", "kind", "code"),
    [
        (["true"], "succeeded", 0),
        (["sleep", "0s"], "succeeded", 0),
        (["exit", "1"], "failed", 1),
        (["sh", "-c", "echo oops >&2; exit 3"], "failed", 3),
        (["no-such-binary-armada"], "failed", 127),
    ],
)
async def test_exit_codes(
    started: tuple[ProcessBackend, Recorder], argv: list[str], kind: str, code: int
) -> None:
    backend, recorder = started
    await backend.launch(lease("r1", argv=argv))
    await recorder.wait_for(lambda: recorder.finished("r1"))
    final = recorder.final("r1")
    assert recorder.kinds("r1") == ["pending", "running", kind]
    assert final.exit_code == code
    if code == 3:
        assert "oops" in final.log_tail and final.cause == "Error"


async def test_log_tail_is_the_last_4_kib(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, recorder = started
    script = "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; echo THE-END; exit 2"
    await backend.launch(lease("r1", argv=["sh", "-c", script]))
    await recorder.wait_for(lambda: recorder.finished("r1"))
    tail = recorder.final("r1").log_tail
    assert len(tail.encode()) == LOG_TAIL_BYTES
    assert tail.endswith("line-1999\nTHE-END\n")


async def test_env_and_field_refs(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, recorder = started
    spec = {
        "containers": [
            {
                "name": "main",
                "command": ["sh", "-c"],
                "args": [
                    'echo "$ARMADA_JOB_ID $ARMADA_QUEUE $ARMADA_GANG_ID $GANG $UID $(GREETING)"; exit 9'
                ],
                "env": [
                    {"name": "GREETING", "value": "hello"},
                    {
                        "name": "GANG",
                        "valueFrom": {
                            "fieldRef": {"fieldPath": "metadata.annotations['armadaproject.io/gangId']"}
                        },
                    },
                    {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                ],
            }
        ]
    }
    leased = Lease(
        run_id="r1",
        job_id="j1",
        queue="q1",
        job_set_id="s",
        pod_spec=spec,
        annotations={"armadaproject.io/gangId": "g7"},
        gang_id="g7",
        gang_cardinality=2,
    )
    await backend.launch(leased)
    await recorder.wait_for(lambda: recorder.finished("r1"))
    assert recorder.final("r1").log_tail == "j1 q1 g7 g7 r1 hello\n"


async def test_relaunch_of_a_held_run_is_ignored(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, recorder = started
    await backend.launch(lease("r1", argv=["sleep", "1000"]))
    await backend.launch(lease("r1", argv=["sleep", "1000"]))
    assert recorder.kinds("r1") == ["pending", "running"]


async def test_kill_stops_the_whole_process_group(
    started: tuple[ProcessBackend, Recorder], tmp_path: Path
) -> None:
    backend, recorder = started
    await backend.launch(lease("r1", argv=["sh", "-c", "sleep 1000 & sleep 1000 & wait"]))
    pid = RunDir.of(tmp_path, "r1").live_pid()
    assert pid is not None
    assert group_alive(pid)
    await backend.kill("r1")
    assert recorder.gone_runs == ["r1"]
    assert not group_alive(pid)
    assert not (tmp_path / "runs" / "r1").exists()


async def test_active_deadline_fails_the_run(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, recorder = started
    leased = lease("r1", argv=["sleep", "1000"])
    leased.pod_spec["activeDeadlineSeconds"] = 1
    await backend.launch(leased)
    await recorder.wait_for(lambda: recorder.finished("r1"))
    final = recorder.final("r1")
    assert (final.kind, final.cause) == ("failed", "DeadlineExceeded")


async def test_restarted_backend_adopts_its_runs(tmp_path: Path) -> None:
    first, recorder = make_backend(tmp_path), Recorder()
    await first.start(recorder)
    go = tmp_path / "go"
    await first.launch(lease("waits", argv=["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; exit 4"]))
    sleeps = lease("sleeps", argv=["sleep", "1000"], services=[ServiceConfig(ports=[8080])])
    sleeps.pod_spec["containers"][0]["ports"] = [{"containerPort": 8080}]
    await first.launch(sleeps)
    await first.launch(lease("done", argv=["true"]))
    await recorder.wait_for(lambda: recorder.finished("done"))
    await first.release("done")
    await first.close()

    second, again = make_backend(tmp_path), Recorder()
    found = {run.run_id: run.phase for run in await second.discover()}
    assert found == {"waits": "running", "sleeps": "running"}
    await second.start(again)
    go.touch()
    await again.wait_for(lambda: again.finished("waits"))
    assert (again.final("waits").kind, again.final("waits").exit_code) == ("failed", 4)
    await second.kill("sleeps")
    assert again.gone_runs == ["sleeps"]
    # Where its port is reached is said again (the server keeps the first it got).
    assert recorder.kinds("sleeps") == ["pending", "running", "ingressInfo"]
    assert again.kinds("sleeps") == ["ingressInfo"]
    assert again.statuses[0].ingress_addresses == {8080: "127.0.0.1:8080"}
    await second.close()


async def test_release_without_retention_removes_the_run_directory(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path, retention=0, log_retention=0), Recorder()
    await backend.start(recorder)
    await backend.launch(lease("r1", argv=["true"]))
    await recorder.wait_for(lambda: recorder.finished("r1"))
    await backend.release("r1")
    assert not (tmp_path / "runs" / "r1").exists()
    await backend.close()


async def test_a_discarded_failure_removes_its_run_directory_despite_retention(tmp_path: Path) -> None:
    """A failure category with ``action: Delete``: its output goes at once, others are kept."""
    backend, recorder = make_backend(tmp_path, retention=3600), Recorder()
    await backend.start(recorder)
    await backend.launch(lease("r1", argv=["sh", "-c", "exit 42"]))
    await backend.launch(lease("r2", argv=["sh", "-c", "exit 3"]))
    await recorder.wait_for(lambda: recorder.finished("r1", "r2"))
    await backend.release("r1", discard=True)
    await backend.release("r2")
    assert not (tmp_path / "runs" / "r1").exists()
    assert (tmp_path / "runs" / "r2").exists()
    await backend.close()


async def test_unstartable_process_fails_the_run(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, recorder = started
    leased = lease("r1", argv=["true"])
    leased.pod_spec["containers"][0]["workingDir"] = "/no/such/dir/armada"
    await backend.launch(leased)
    final = recorder.final("r1")
    assert (final.kind, final.cause) == ("failed", "Error") and "cannot start process" in final.reason


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ({"args": ["ls"]}, "succeeded"),
        ({"args": ["echo", "Hello world!"]}, "succeeded"),
        ({"args": ["exit", "1"]}, "failed"),
        ({"command": ["sh"], "args": ["-c", "sleep $(( (RANDOM % 2) + 0 ))"]}, "succeeded"),
    ],
)
async def test_upstream_testsuite_shapes(
    started: tuple[ProcessBackend, Recorder], spec: dict[str, object], kind: str
) -> None:
    backend, recorder = started
    leased = lease("r1")
    leased.pod_spec["containers"] = [{"name": "c", "image": "alpine:3.20.0", **spec}]
    await backend.launch(leased)
    await recorder.wait_for(lambda: recorder.finished("r1"))
    assert recorder.final("r1").kind == kind


async def test_zero_grace_period_kills_at_once(started: tuple[ProcessBackend, Recorder]) -> None:
    backend, recorder = started
    leased = lease("r1", argv=["sh", "-c", "trap '' TERM; sleep 1000"])
    leased.pod_spec["terminationGracePeriodSeconds"] = 0
    await backend.launch(leased)
    await backend.kill("r1")
    assert recorder.gone_runs == ["r1"]


async def test_killing_a_run_just_launched_removes_its_directory_every_time(tmp_path: Path) -> None:
    """The kill path, many times over, each with a stamper just started (the slowest to take
    a run's pipe): the stamper creates the run's output once it takes the pipe, so a kill that
    removed the directory before the stamper had finished with it failed "Directory not
    empty" (about 1 in 25) or left the stamper finding the directory gone (1 in 5)."""
    for attempt in range(60):
        state = tmp_path / str(attempt)
        backend, recorder = make_backend(state), Recorder()
        await backend.start(recorder)
        leased = lease("r1", argv=["sh", "-c", "trap '' TERM; sleep 1000"])
        leased.pod_spec["terminationGracePeriodSeconds"] = 0
        try:
            await backend.launch(leased)
            await backend.kill("r1")
        finally:
            await backend.close()
        assert not RunDir.of(state, "r1").path.exists()
        assert (state / "stamper.log").read_text() == "", f"attempt {attempt}: the stamper found the run gone"
