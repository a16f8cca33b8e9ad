"""The process groups the process backend started, and whether they still run."""

from __future__ import annotations

import os
from pathlib import Path

from armada.executor.backends.process_state import run_dirs


def process_groups(state_dir: Path) -> list[int]:
    """Process ids the process backend recorded for its (still running) runs."""
    return [pid for run in run_dirs(state_dir) if (pid := run.live_pid()) is not None]


def alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True
