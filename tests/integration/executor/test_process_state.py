"""The process backend's run record: one file, appended to by the executor and the run."""

from __future__ import annotations

import os
import time
from pathlib import Path

from armada.executor.backends.children import boot_ticks
from armada.executor.backends.process_state import RunDir
from tests.integration.executor.conftest import lease


def own_start_ticks() -> int:
    stat = Path("/proc/self/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[19])


def test_the_record_keeps_lease_pid_and_exit_code_in_any_order(tmp_path: Path) -> None:
    run = RunDir.of(tmp_path, "r/1")
    run.create(lease("r/1"))
    with run.record.open("a") as record:  # a fast run's shell may append before the pid is
        record.write("exit 3\n")
    started = own_start_ticks()
    before = time.time()
    run.record_pid(os.getpid(), (started, started))
    assert run.lease() is not None and run.lease().run_id == "r/1"  # type: ignore[union-attr]
    assert (run.exit_code(), run.live_pid()) == (3, os.getpid())
    assert before <= (run.started_at() or 0) <= time.time()
    run.mark_released()
    assert run.released and (run.released_since() or 0) >= before
    assert (run.exit_code(), run.lease() is not None) == (3, True)


def test_a_pid_started_outside_the_bounds_is_another_process(tmp_path: Path) -> None:
    run = RunDir.of(tmp_path, "r1")
    run.create(lease("r1"))
    assert run.live_pid() is None and run.exit_code() is None
    later = own_start_ticks() + 1
    run.record_pid(os.getpid(), (later, boot_ticks()))
    assert run.live_pid() is None
