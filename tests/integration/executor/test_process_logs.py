"""Log reads of the process backend: stamped lines, selection, size cap, retention."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from armada.executor.log_lines import LogMissing
from armada.model.leases import LogOrder
from tests.integration.executor.conftest import lease
from tests.integration.executor.recorder import Recorder
from tests.integration.executor.test_process_backend import make_backend


def order(run_id: str = "r1", **fields: object) -> LogOrder:
    return LogOrder(request_id="q", run_id=run_id, job_id=f"job-{run_id}", **fields)  # type: ignore[arg-type]


async def test_lines_are_stamped_and_read_while_running_and_after(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path), Recorder()
    await backend.start(recorder)
    go = tmp_path / "go"
    script = f"echo one; echo two >&2; while [ ! -e {go} ]; do sleep 0.05; done; echo three"
    before = time.time()
    await backend.launch(lease("r1", argv=["sh", "-c", script]))
    deadline = time.monotonic() + 10
    while [line.line for line in await backend.read_log(order())] != ["one", "two"]:
        assert time.monotonic() < deadline, "the running process's lines never showed"
        await asyncio.sleep(0.05)
    go.touch()
    await recorder.wait_for(lambda: recorder.finished("r1"))
    await backend.release("r1")
    lines = await backend.read_log(order())
    assert [line.line for line in lines] == ["one", "two", "three"]
    for line in lines:
        stamped = datetime.fromisoformat(line.timestamp.replace("Z", "+00:00"))
        assert before - 1 <= stamped.timestamp() <= time.time()
        assert len(line.timestamp) == len("2026-11-24T03:44:52.123456789Z")
    await backend.close()


async def test_selection_tail_since_and_byte_limit(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path), Recorder()
    await backend.start(recorder)
    await backend.launch(lease("r1", argv=["sh", "-c", "echo a; echo b; sleep 1.2; echo c; echo d"]))
    await recorder.wait_for(lambda: recorder.finished("r1"), within=15)
    assert [x.line for x in await backend.read_log(order(tail_lines=3))] == ["b", "c", "d"]
    assert [x.line for x in await backend.read_log(order(tail_lines=0))] == []
    assert [x.line for x in await backend.read_log(order(limit_bytes=3))] == ["a", "b"]
    everything = await backend.read_log(order())
    third = datetime.fromisoformat(everything[2].timestamp.replace("Z", "+00:00"))
    assert [x.line for x in await backend.read_log(order(since_time=third))] == ["c", "d"]
    assert [x.line for x in await backend.read_log(order(since_time=third, tail_lines=1))] == ["d"]
    await backend.close()


async def test_output_is_capped_at_the_setting(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path, log_max_bytes=4096), Recorder()
    await backend.start(recorder)
    script = "i=0; while [ $i -lt 400 ]; do echo line-$i; i=$((i+1)); done"
    await backend.launch(lease("r1", argv=["sh", "-c", script]))
    await recorder.wait_for(lambda: recorder.finished("r1"), within=15)
    run_dir = tmp_path / "runs" / "r1"
    assert sum(p.stat().st_size for p in run_dir.glob("output*")) <= 4096
    lines = [x.line for x in await backend.read_log(order())]
    assert lines[-1] == "line-399"
    assert lines == [f"line-{i}" for i in range(400 - len(lines), 400)]  # the newest, in order
    await backend.close()


async def test_missing_logs_are_told_apart(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path, retention=0, log_retention=0), Recorder()
    await backend.start(recorder)
    await backend.launch(lease("r1", argv=["echo", "hi"]))
    await recorder.wait_for(lambda: recorder.finished("r1"))
    with pytest.raises(LogMissing, match="previous"):
        await backend.read_log(order(previous=True))
    with pytest.raises(LogMissing, match="first container"):
        await backend.read_log(order(container="sidecar"))
    await backend.release("r1")  # no retention: the output goes with the run
    with pytest.raises(LogMissing, match="retention"):
        await backend.read_log(order())
    with pytest.raises(LogMissing):
        await backend.read_log(order("never-here"))
    await backend.close()


async def test_failed_run_log_tail_has_no_stamps(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path), Recorder()
    await backend.start(recorder)
    await backend.launch(lease("r1", argv=["sh", "-c", "echo boom; exit 2"]))
    await recorder.wait_for(lambda: recorder.finished("r1"))
    assert recorder.final("r1").log_tail == "boom\n"
    assert [x.line for x in await backend.read_log(order(since_time=datetime.now(UTC)))] == []
    await backend.close()
