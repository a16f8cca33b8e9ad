"""Log reads of the process backend: stamped lines, selection, size cap, retention."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from armada.executor.backends.output_pipes import OutputPipes
from armada.executor.backends.process import ProcessBackend
from armada.executor.backends.process_state import RunDir
from armada.executor.log_lines import LogMissing, cap, parse, select
from armada.model.leases import LogOrder
from tests.integration.executor.backends import make_backend
from tests.integration.executor.conftest import lease
from tests.integration.executor.recorder import Recorder


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def stampers_of(state: Path) -> set[int]:
    """Live log stampers working in ``state``."""
    pids = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (
                b"log_stamp.py" in (proc / "cmdline").read_bytes()
                and (proc / "cwd").resolve() == state.resolve()
            ):
                pids.add(int(proc.name))
        except OSError:
            continue
    return {pid for pid in pids if alive(pid)}


async def eventually(check: Callable[[], Awaitable[bool] | bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await _value(check()):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


async def _value(result: Awaitable[bool] | bool) -> bool:
    return await result if inspect.isawaitable(result) else bool(result)


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


async def shows(backend: ProcessBackend, run_id: str, expected: list[str]) -> bool:
    return [line.line for line in await backend.read_log(order(run_id))] == expected


async def launch_before_and_after(backend: ProcessBackend, state: Path) -> Path:
    """Run ``r1``, which prints ``before``, then ``after`` once the returned file exists;
    return when ``before`` has been stamped."""
    go = state / "go"
    script = f"echo before; while [ ! -e {go} ]; do sleep 0.05; done; echo after"
    await backend.launch(lease("r1", argv=["sh", "-c", script]))
    await eventually(lambda: shows(backend, "r1", ["before"]), "the first line never showed")
    return go


async def test_output_after_an_executor_restart_is_kept_and_the_old_stamper_exits(tmp_path: Path) -> None:
    state = tmp_path
    first, recorder = make_backend(state), Recorder()
    await first.start(recorder)
    go = await launch_before_and_after(first, state)
    [old] = stampers_of(state)
    await first.close()  # as a restart does: the run and its stamper carry on

    second, again = make_backend(state), Recorder()
    assert [run.run_id for run in await second.discover()] == ["r1"]
    await second.start(again)
    go.touch()
    await again.wait_for(lambda: again.finished("r1"))
    await eventually(lambda: shows(second, "r1", ["before", "after"]), "output after the restart was lost")
    await eventually(lambda: not alive(old), "the let-go stamper outlived its last run")
    await second.close()


async def test_a_dead_stamper_is_replaced_without_harm_to_running_runs(tmp_path: Path) -> None:
    backend, recorder = make_backend(tmp_path), Recorder()
    await backend.start(recorder)
    go = await launch_before_and_after(backend, tmp_path)
    [first] = stampers_of(tmp_path)
    os.kill(first, signal.SIGKILL)
    await eventually(lambda: not alive(first), "the stamper did not die")

    await backend.launch(lease("r2", argv=["echo", "two"]))
    await recorder.wait_for(lambda: recorder.finished("r2"))
    go.touch()
    await recorder.wait_for(lambda: recorder.finished("r1"))
    # The running run neither died of SIGPIPE nor lost what it wrote after the death.
    assert [recorder.final(run).kind for run in ("r1", "r2")] == ["succeeded", "succeeded"]
    assert await shows(backend, "r1", ["before", "after"])
    assert await shows(backend, "r2", ["two"])
    [second] = stampers_of(tmp_path)
    assert second != first
    await backend.close()
    await eventually(lambda: not alive(second), "an idle stamper outlived its executor's letting go")


def lines_of(path: Path) -> list[str]:
    return [line.line for line in parse(path.read_text())]


async def test_runs_that_end_together_while_the_executor_is_busy_are_all_told(tmp_path: Path) -> None:
    """The stamper's socket buffer holds ~280 answers: those of runs that end while the
    executor is not reading wait for room (several ids to a message), and none is lost (a
    lost one made its run wait out the drain bound; from the 279th run on before)."""
    pipes = OutputPipes(tmp_path)
    runs = [f"run-{i}" for i in range(500)]
    write_ends = [await pipes.open(run, tmp_path / run, 1 << 20) for run in runs]
    for write_end in write_ends:
        os.write(write_end, b"last words\n")
        os.close(write_end)
    time.sleep(0.5)  # noqa: ASYNC251 - the executor's loop is busy while the runs end
    await asyncio.gather(*(pipes.drained(run, within=5) for run in runs))
    assert not pipes._pipes, "runs whose end the stamper never told"
    assert all(lines_of(tmp_path / run) == ["last words"] for run in runs)
    await pipes.close()


async def test_a_read_parses_only_the_newest_bytes_its_answer_can_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chatty run's log is far bigger than an answer: a read without ``limitBytes`` reads
    only the newest ``maxBytes`` of it (a line takes no fewer bytes encoded than stamped),
    and answers the same lines as reading it all would."""
    backend, recorder = make_backend(tmp_path), Recorder()
    await backend.start(recorder)
    script = "i=0; while [ $i -lt 3000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done"
    await backend.launch(lease("r1", argv=["sh", "-c", script]))
    await recorder.wait_for(lambda: recorder.finished("r1"), within=30)
    windows: list[int] = []
    log_text = RunDir.log_text

    def recorded(run_dir: RunDir, limit: int) -> str:
        windows.append(limit)
        return log_text(run_dir, limit)

    monkeypatch.setattr(RunDir, "log_text", recorded)
    lines = await backend.read_log(order(max_bytes=16 * 1024, tail_lines=10_000))
    assert windows == [16 * 1024]
    everything = select(parse(log_text(RunDir.of(tmp_path, "r1"), 10**9)), order(tail_lines=3000))
    assert lines == cap(everything, 16 * 1024) and lines[-1].line.startswith("line-2999-")
    assert 16 * 1024 // 2 < len(msgspec.json.encode(lines)) <= 16 * 1024
    await backend.read_log(order(max_bytes=16 * 1024, limit_bytes=100))  # the first bytes: all of it
    assert windows[-1] == backend._settings.log_max_bytes
    await backend.close()
