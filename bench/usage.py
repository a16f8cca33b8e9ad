"""Where the CPU goes in a benchmark: a process tree's CPU seconds (the server's; its
executors'), a database's backends', and the server's append lock busy time (from ``/metrics``).

Linux only (``/proc``). PostgreSQL backends are found by database name in
``pg_stat_activity`` (the server must run on this host); a backend that ended between two
samples is missed, which the server's pooled connections make rare.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import httpx
import psycopg

TICKS = os.sysconf("SC_CLK_TCK")
LOCK_BUSY = "armada_eventstore_append_lock_busy_seconds_total"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return found


def _tree(pid: int) -> list[int]:
    """A process and its live descendants (``armada serve --workers``)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        pending += _children(current)
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its live descendants."""
    return sum(cpu_seconds(each) for each in _tree(pid))


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of one process in MiB (0 if it is gone); ``VmHWM``: its peak so far."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:")), "0")
    return int(kib) / 1024


def tree_rss_mb(pid: int, field: str = "VmRSS") -> float:
    """:func:`rss_mb` summed over a process and its live descendants (shared pages counted in each)."""
    return sum(rss_mb(each, field) for each in _tree(pid))


def backend_cpu(conninfo: str, database: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend connected to ``database``, by pid."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database])
        pids = [row[0] for row in rows]
    return {pid: cpu_seconds(pid) for pid in pids}


def lock_busy_seconds(base_url: str) -> float:
    """The server's ``armada_eventstore_append_lock_busy_seconds_total`` (one replica's)."""
    # Only that series: the whole exposition of a big fleet takes the server seconds of CPU.
    answer = httpx.get(f"{base_url}/metrics", params={"name[]": LOCK_BUSY}, timeout=30)
    for line in answer.text.splitlines():
        if line.startswith(LOCK_BUSY):
            return float(line.split()[-1])
    raise LookupError(f"{LOCK_BUSY} not exposed by {base_url}")


_LANE_LINE = re.compile(
    r"armada_eventstore_append_lane_(?P<what>[a-z]+?)(_seconds)?_total"
    r'\{lane="(?P<lane>[a-z]+)"\} (?P<value>\S+)'
)


def lane_counters(base_url: str) -> dict[str, float]:
    """The server's per-lane append counters (``prompt_queued`` ...); none from an older server."""
    found: dict[str, float] = {}
    for line in httpx.get(f"{base_url}/metrics", timeout=30).text.splitlines():
        matched = _LANE_LINE.match(line)
        if matched:
            found[f"{matched['lane']}_{matched['what']}"] = float(matched["value"])
    return found


def lane_figures(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    """Per lane between two :func:`lane_counters`: writes, and the mean ms queued, in their
    turn, and waiting for their group's commit."""
    result: dict[str, float] = {}
    for lane in ("urgent", "prompt", "bulk"):
        writes = end.get(f"{lane}_writes", 0.0) - start.get(f"{lane}_writes", 0.0)
        if not writes:
            continue
        result[f"{lane}_writes"] = writes
        for what in ("queued", "turn", "commit"):
            spent = end[f"{lane}_{what}"] - start.get(f"{lane}_{what}", 0.0)
            result[f"{lane}_{what}_ms_mean"] = round(1000 * spent / writes, 1)
    return result


class Sample(NamedTuple):
    at: float
    server_cpu: float
    lock_busy: float
    backends: dict[int, float]
    #: The executors' processes together (0 when none were named).
    executors_cpu: float = 0.0


class Usage:
    """Samples the server's and its database's CPU and the append lock at two moments."""

    def __init__(
        self,
        server_pid: int,
        base_url: str,
        database: tuple[str, str] | None,
        executor_pids: Sequence[int] = (),
    ) -> None:
        self._pid = server_pid
        self._url = base_url
        self._database = database  # (conninfo of the PostgreSQL server, database name)
        self._executors = list(executor_pids)

    def sample(self) -> Sample:
        backends = backend_cpu(*self._database) if self._database else {}
        executors = sum(tree_cpu_seconds(pid) for pid in self._executors)
        server = tree_cpu_seconds(self._pid)
        return Sample(time.monotonic(), server, lock_busy_seconds(self._url), backends, executors)

    @staticmethod
    def figures(start: Sample, end: Sample, jobs: int) -> dict[str, float]:
        """CPU seconds per 1,000 jobs (server, executors, PostgreSQL) and the lock's busy fraction."""
        per_1000 = 1000 / jobs
        result = {
            "server_cpu_s_per_1000_jobs": round((end.server_cpu - start.server_cpu) * per_1000, 3),
            "append_lock_busy_fraction": round((end.lock_busy - start.lock_busy) / (end.at - start.at), 3),
        }
        if end.executors_cpu:
            used = end.executors_cpu - start.executors_cpu
            result["executors_cpu_s_per_1000_jobs"] = round(used * per_1000, 3)
        if end.backends:
            used = sum(cpu - start.backends.get(pid, 0.0) for pid, cpu in end.backends.items())
            result["postgres_cpu_s_per_1000_jobs"] = round(used * per_1000, 3)
        return result
