"""On-disk state of the process backend: one directory per run.

``<state_dir>/runs/<runId>/`` holds ``lease.json``, ``pid`` (pid and kernel start time,
so a recycled pid is never mistaken for the run), ``output`` and ``output.1`` (stdout and
stderr, each line stamped with its time, the older half rotated into ``output.1``),
``exit_code`` (written by the run's wrapper shell, so it exists even if the executor
was dead when the run ended) and, once the result was delivered, ``released``.
A restarted executor rebuilds its view of its runs from these directories.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import msgspec

from armada.executor.log_lines import parse
from armada.model.leases import LOG_TAIL_BYTES, Lease, tail_text

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _start_time(pid: int) -> str | None:
    """Kernel start time of a live (non-zombie) process; None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # pragma: no cover - no procfs: fall back to a signal probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


@dataclass(frozen=True)
class RunDir:
    """Paths and records of one run's directory."""

    path: Path

    @classmethod
    def of(cls, root: Path, run_id: str) -> RunDir:
        return cls(root / "runs" / _UNSAFE.sub("_", run_id))

    @property
    def output(self) -> Path:
        return self.path / "output"

    @property
    def exit_file(self) -> Path:
        return self.path / "exit_code"

    @property
    def work(self) -> Path:
        return self.path / "work"

    def create(self, lease: Lease) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        (self.path / "lease.json").write_bytes(msgspec.json.encode(lease))

    def lease(self) -> Lease | None:
        try:
            return msgspec.json.decode((self.path / "lease.json").read_bytes(), type=Lease)
        except (OSError, msgspec.DecodeError):
            return None

    def record_pid(self, pid: int) -> None:
        (self.path / "pid").write_text(f"{pid} {_start_time(pid) or ''}\n")

    def live_pid(self) -> int | None:
        """The run's process id if that very process is still alive."""
        try:
            pid_text, _, started = (self.path / "pid").read_text().strip().partition(" ")
        except OSError:
            return None
        pid = int(pid_text)
        now = _start_time(pid)
        return pid if now is not None and (not started or now == started) else None

    def started_at(self) -> float | None:
        """Wall-clock time the process was started (when its pid was recorded)."""
        try:
            return (self.path / "pid").stat().st_mtime
        except OSError:
            return None

    def exit_code(self) -> int | None:
        try:
            return int(self.exit_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def log_text(self, limit: int) -> str:
        """The newest ``limit`` bytes of the run's stamped output, whole lines only."""
        data = b""
        for path in (self.output, self.output.with_name("output.1")):
            if len(data) >= limit:
                break
            try:
                with path.open("rb") as output:
                    output.seek(max(0, output.seek(0, os.SEEK_END) - (limit - len(data))))
                    data = output.read() + data
            except OSError:
                continue
        if len(data) >= limit:
            data = data[data.find(b"\n") + 1 :]  # a cut first line
        return data.decode(errors="replace")

    def log_tail(self) -> str:
        """The last ``LOG_TAIL_BYTES`` of the output, without the time stamps."""
        lines = parse(self.log_text(8 * LOG_TAIL_BYTES))
        return tail_text("".join(line.line + "\n" for line in lines).encode())

    def remove_work(self) -> None:
        """Drop the run's working directory, keeping its output (and records)."""
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.work)

    @property
    def released(self) -> bool:
        return (self.path / "released").exists()

    def mark_released(self) -> None:
        (self.path / "released").touch()

    def released_since(self) -> float | None:
        """Wall-clock time the result was delivered, if it was."""
        try:
            return (self.path / "released").stat().st_mtime
        except OSError:
            return None

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.path)


def run_dirs(root: Path) -> list[RunDir]:
    """Every run directory under ``root``."""
    runs = root / "runs"
    return [RunDir(path) for path in sorted(runs.iterdir())] if runs.is_dir() else []
