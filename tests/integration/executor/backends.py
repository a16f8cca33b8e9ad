"""The process backend as the executor's tests build it: a state directory, one 4-cpu node."""

from __future__ import annotations

from pathlib import Path

from armada.executor.backends.process import ProcessBackend
from armada.executor.settings import ProcessSettings


def make_backend(
    state: Path, retention: float = 300.0, *, log_retention: float = 3600.0, log_max_bytes: int = 1 << 20
) -> ProcessBackend:
    settings = ProcessSettings(
        state_dir=str(state),
        node_name="local",
        cpu="4",
        memory="8Gi",
        kill_grace_seconds=5,
        log_retention_seconds=log_retention,
        log_max_bytes=log_max_bytes,
    )
    return ProcessBackend(settings, "test", retention)
