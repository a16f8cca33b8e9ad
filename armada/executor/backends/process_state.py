"""On-disk state of the process backend: one directory per run.

``<state_dir>/runs/<runId>/`` holds the run's record ``run``, its working directory
``work`` (unless the pod names its own) and ``output`` and ``output.1`` (stdout and
stderr, each line stamped with its time, the older half rotated into ``output.1``).
The record is one line of lease JSON, then ``pid <pid> <earliest> <latest> <time>`` once
the process started (the bounds, in clock ticks since boot, of its kernel start time, so a
recycled pid is never mistaken for the run) and ``exit <code>``, appended by the run's
wrapper shell (so it is there even if the executor was dead when the run ended). Once the
result was delivered the record is renamed ``released``, its modification time the moment
of delivery.
A restarted executor rebuilds its view of its runs from these directories. Only the
executor's user reads them: records and output are 0600, the state directory 0700 (0711
when jobs run as another user, whose ``work`` is then theirs).

Why one record and not a file per fact: on this kind of host (ext4 on a virtual disk)
creating a file costs 10 µs to 1 ms of CPU, appending to one or renaming it ~10 µs;
a run creates its directory, the record, its working directory and its output, nothing
more.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from armada.executor.log_lines import parse
from armada.executor.settings import ProcessSettings
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
    def record(self) -> Path:
        """The run's record while its result is undelivered (the wrapper shell appends its
        exit code here)."""
        return self.path / "run"

    @property
    def work(self) -> Path:
        return self.path / "work"

    def create(self, lease: Lease, own_work: bool = True, owner: tuple[int, int] | None = None) -> None:
        """Make the run's directory and record (and ``work``, unless the pod has its own, owned
        by ``owner``'s uid and gid when jobs run as another user). Only ``work`` is theirs:
        the record and the output stay the executor's, readable by it alone."""
        self.path.mkdir(mode=0o711, parents=True, exist_ok=True)
        if own_work:
            self.work.mkdir(mode=0o700, exist_ok=True)
            if owner is not None:
                os.chown(self.work, *owner)
        with open(self.record, "wb", opener=_private) as record:
            record.write(msgspec.json.encode(lease) + b"\n")

    def lease(self) -> Lease | None:
        lines = self._lines()
        try:
            return msgspec.json.decode(lines[0], type=Lease) if lines else None
        except msgspec.DecodeError:
            return None

    def record_pid(self, pid: int, started: tuple[int, int]) -> None:
        """Append the pid, the bounds of its kernel start time and the time now (the run's start)."""
        with self.record.open("a") as record:
            record.write(f"pid {pid} {started[0]} {started[1]} {time.time()}\n")

    def live_pid(self) -> int | None:
        """The run's process id if that very process is still alive (a process started
        within the recorded bounds: not another that got the pid later)."""
        fields = self._field("pid")
        if fields is None:
            return None
        pid, earliest, latest = (int(field) for field in fields[:3])
        now = _start_time(pid)
        return pid if now is not None and (now == "" or earliest <= int(now) <= latest) else None

    def started_at(self) -> float | None:
        """Wall-clock time the process was started (when its pid was recorded)."""
        fields = self._field("pid")
        return float(fields[3]) if fields is not None else None

    def exit_code(self) -> int | None:
        fields = self._field("exit")
        try:
            return int(fields[0]) if fields is not None else None
        except ValueError:
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
        try:
            self.work.rmdir()  # most runs leave it empty: one system call, not a tree walk
        except FileNotFoundError:
            pass
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(self.work)

    @property
    def released(self) -> bool:
        return self._released.exists()

    def mark_released(self) -> None:
        """The result was delivered: the record is renamed (no new file: creating one costs
        the file system far more than a rename) and stamped with the time."""
        os.replace(self.record, self._released)
        os.utime(self._released)

    def released_since(self) -> float | None:
        """Wall-clock time the result was delivered, if it was."""
        try:
            return self._released.stat().st_mtime
        except OSError:
            return None

    @property
    def _released(self) -> Path:
        return self.path / "released"

    def _lines(self) -> list[bytes]:
        """The record's lines: the lease, then ``pid …`` and ``exit …`` once known."""
        for path in (self.record, self._released):
            try:
                return path.read_bytes().splitlines()
            except FileNotFoundError:
                continue
            except OSError:
                return []
        return []

    def _field(self, name: str) -> list[str] | None:
        """The values of the record's last ``name`` line."""
        prefix = name.encode() + b" "
        for line in reversed(self._lines()[1:]):
            if line.startswith(prefix):
                return line.decode().split()[1:]
        return None

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.path)


def _private(path: str, flags: int) -> int:
    """Files the executor's user alone reads: a lease holds the job's environment."""
    return os.open(path, flags, 0o600)


def state_root(settings: ProcessSettings, cluster_id: str) -> Path:
    """The state directory: ``process.stateDir``, else one per cluster id in the temp directory."""
    return Path(settings.state_dir or Path(tempfile.gettempdir()) / f"armada-executor-{cluster_id}")


def foreign_state(root: Path) -> list[str]:
    """Why the state directory must not be used: it, or its ``runs``, or a link to either,
    belongs to another user (``/tmp`` is anyone's: another user could have made it first)."""
    return [
        f"{place} belongs to another user: choose another executor.process.stateDir"
        for place in (root, root / "runs")
        if os.path.lexists(place) and {place.lstat().st_uid, _owner(place)} != {os.geteuid()}
    ]


def _owner(place: Path) -> int | None:
    with contextlib.suppress(OSError):
        return place.stat().st_uid
    return None


def prepare_root(root: Path, shared: bool) -> None:
    """Make the state directory and its ``runs`` this user's alone (0700), or, when jobs run as
    another user (``shared``), passable but not listable (0711), so that a job reaches its
    own working directory and nothing else. One of another user (:func:`foreign_state`) is
    refused, never used."""
    mode = 0o711 if shared else 0o700
    for place in (root, root / "runs"):
        place.mkdir(mode=mode, parents=True, exist_ok=True)
        if refusals := foreign_state(root):
            raise PermissionError(refusals[0])
        place.chmod(mode)


def run_dirs(root: Path) -> list[RunDir]:
    """Every run directory under ``root``."""
    runs = root / "runs"
    return [RunDir(path) for path in sorted(runs.iterdir())] if runs.is_dir() else []
