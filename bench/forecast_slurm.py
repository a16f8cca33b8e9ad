"""``bench/forecast.py --slurm``: the same workload through Slurm, scored as ``squeue --start``.

A private Slurm cluster (``slurm_peer.sh``: 20 slurmd "nodes" of 16 cpus on loopback, as
many as the replay's nodes) runs the replay's workload in real time, ``--slurm-scale``
simulated seconds to the second: each job set arrives at its time, each job is a ``sleep``
whose time limit equals its runtime (gangs: one job of their members' tasks). Slurm's time
limits are whole minutes, so each runtime is rounded up to one (``scale`` minutes of
simulated time: the workload's runtimes quantised, limits still equal to them) and backfill
runs at one-second resolution. Every ``--forecast-every`` simulated seconds, from the end of
the warm-up, every pending job's ``squeue --start`` time is recorded; each job's actual start
is read from ``squeue`` as it runs. The same relative error by horizon as the replay's.

Slurm here orders jobs by submit time (``priority/basic``: no accounting, so no fair share
and no queue weights), backfilling by the time limits: each side is scored on its own
schedule. ``squeue --start`` gives no range (coverage is not reported).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.forecast import Job, Record

PEER = Path(os.environ.get("SLURM_PEER", "/work/shared/tools/slurm_peer.sh"))
#: The clusters' directories are ``BASE-<seed>``; ports 16900 + seed and 17100 + 100 seed on.
BASE = "/tmp/slurmpeer-forecast"
#: Backfill planning every second, at one-second resolution, over every pending job.
SCHED_PARAMS = (
    "batch_sched_delay=0,sched_min_interval=0,default_queue_depth=10000,bf_interval=1,"
    "bf_resolution=1,bf_max_job_test=10000,bf_continue,max_rpc_cnt=0,sched_interval=1"
)


@dataclass
class SlurmRun:
    """One seed's Slurm run: records and actual starts in simulated seconds (as a Replay's)."""

    records: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    started: dict[str, float] = field(default_factory=dict)
    submitted: int = 0
    estimated: int = 0
    unestimated: int = 0


class Cluster:
    """``slurm_peer.sh`` holding a cluster up; stopped by its recorded process ids."""

    def __init__(self, nodes: int, seed: int) -> None:
        base = f"{BASE}-{seed}"  # one cluster per seed: seeds can run side by side
        env = {
            **os.environ,
            "MODES": " ",
            "HOLD_S": "86400",
            "LAYOUT": "multi",
            "NODES": str(nodes),
            "CPUS": str(16 * nodes),
            "MEM_MB": str(64 * 1024),
            "BASE": base,
            "CTLD_PORT": str(16900 + seed),
            "SLURMD_PORT": str(17100 + 100 * seed),
            "SCHED_PARAMS": SCHED_PARAMS,
            "MINJOBAGE": "30",
        }
        self.env = {**env, "SLURM_CONF": f"{base}/etc/slurm.conf"}
        log = Path(f"{base}.log")
        self.log = log.open("w")
        self.process = subprocess.Popen(["bash", str(PEER)], env=env, stderr=self.log, stdout=self.log)
        deadline = time.monotonic() + 600
        while "holding the cluster up" not in log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"slurm_peer.sh did not bring a cluster up:\n{log.read_text()}")
            time.sleep(1)

    def run(self, *command: str) -> str:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, check=True).stdout

    def stop(self) -> None:
        """Jobs cancelled, then the peer's own teardown (by its recorded process ids), which
        it runs on TERM once its holding ``sleep`` has ended: only that child is ended here."""
        subprocess.run(["scancel", "--quiet", "--user", "root"], env=self.env, check=False)
        self.process.send_signal(signal.SIGTERM)
        children = subprocess.run(
            ["pgrep", "-P", str(self.process.pid), "-x", "sleep"], check=False, capture_output=True, text=True
        ).stdout.split()
        for child in children:
            os.kill(int(child), signal.SIGTERM)
        try:
            self.process.wait(timeout=300)
        except subprocess.TimeoutExpired:
            print(f"slurm_peer.sh (pid {self.process.pid}) still tearing down", file=sys.stderr)
        self.log.close()


def _epoch(stamp: str) -> float | None:
    """Slurm's local ``YYYY-MM-DDTHH:MM:SS``, ``None`` for ``N/A`` and the like."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def run_slurm(args: argparse.Namespace, seed: int, workload: list[tuple[float, list[Job]]]) -> SlurmRun:
    """Submit ``workload`` ((time, jobs), as ``Replay.workload``) in scaled real time and
    record ``squeue --start``'s forecasts and the actual starts."""
    from bench.forecast import Record  # noqa: PLC0415 (the caller imports this module)

    scale = args.slurm_scale
    quantum = 60.0 * scale  # a whole minute of time limit, in simulated seconds
    cluster = Cluster(args.nodes, seed)
    out = SlurmRun()
    members: dict[str, list[str]] = {}  # slurm job id -> our job ids
    try:
        t0 = time.time()
        arrivals = list(workload)
        next_forecast = args.warmup * 3600 + args.forecast_every
        end = (args.warmup + args.hours) * 3600
        stop = end * args.slurm_tail
        while True:
            now = (time.time() - t0) * scale
            while arrivals and arrivals[0][0] <= now:
                _, batch = arrivals.pop(0)
                for group in _groups(batch):
                    members[_submit(cluster, group, quantum)] = [job.requirements.id for job in group]
                    out.submitted += 1
            lines = cluster.run("squeue", "-h", "-o", "%i %T %S").splitlines()
            for line in lines:
                slurm_id, state, stamp = line.split()
                start = _epoch(stamp)
                if state != "PENDING" and start is not None and slurm_id in members:
                    for job_id in members[slurm_id]:
                        out.started.setdefault(job_id, (start - t0) * scale)
            if now >= next_forecast and now < end:
                made = now
                for line in lines:
                    slurm_id, state, stamp = line.split()
                    if state != "PENDING" or slurm_id not in members:
                        continue
                    start = _epoch(stamp)
                    if start is None:
                        out.unestimated += 1
                        continue
                    out.estimated += 1
                    expected = max(made, (start - t0) * scale)
                    for job_id in members[slurm_id]:
                        out.records[job_id].append(
                            Record(made, expected, None, None, None, None, "slurm", False)
                        )
                next_forecast += args.forecast_every
            if (not arrivals and not any(" PENDING " in line for line in lines)) or now > stop:
                break
            time.sleep(max(0.0, 1.0 - (time.time() - t0) % 1.0))
    finally:
        cluster.stop()
    return out


def _groups(batch: list[Job]) -> list[list[Job]]:
    """A batch's Slurm jobs: a gang's members together, every other job alone."""
    gangs: dict[str, list[Job]] = defaultdict(list)
    alone: list[list[Job]] = []
    for job in batch:
        gang = job.requirements.gang_id
        if gang:
            gangs[gang].append(job)
        else:
            alone.append([job])
    return [*alone, *gangs.values()]


def _submit(cluster: Cluster, group: list[Job], quantum: float) -> str:
    """``sbatch`` one job (or gang): its time limit, in whole minutes, is its runtime."""
    first = group[0]
    cpus = max(1, int(first.requirements.requests["cpu"]) // 1000)
    minutes = max(1, math.ceil(first.runtime / quantum))
    command = [
        "sbatch", "--parsable", "-o", "/dev/null", "-J", first.requirements.id,
        f"--ntasks={len(group)}", f"--cpus-per-task={cpus}", f"--time={minutes}",
        "--wrap", f"sleep {minutes * 60 - 1}",
    ]  # fmt: skip
    return cluster.run(*command).strip().split(";")[0]
