"""A backlog of 1,000,000 jobs: server memory, cycle time and submission latency while it drains.

    python bench/backlog.py --database-url postgresql://postgres@127.0.0.1:5432/postgres \\
        --jobs 1000000 --queues 10 --executors 2 --nodes-per-executor 2500
    python bench/backlog.py --database-url ... --jobs 100000     # a quick run

Issue #22's goal: with 1,000,000 jobs queued, server RSS <= 1.5 GB, a scheduling cycle <= 1 s
and a submission's p99 <= 1 s while the backlog drains. The benchmark starts ``armada serve``
on a fresh database with no executor, loads ``--jobs`` jobs in batches of ``--batch`` (a few
requests in flight), then starts the fake executors and lets the backlog drain while a probe
client submits ``--probe-batch`` jobs every ``--probe-interval`` seconds into their own queue
(open loop: a slow call does not delay the next) and times each call. The probe stops once
99% of the backlog has ended; the drain ends when every job has.

Figures: load time and rate; the server's RSS (its process tree, from ``/proc``, sampled
every ``--sample-interval`` seconds) after the load, at its peak and its median while
draining; scheduling cycles from the server's ``scheduling cycle`` log lines (the core's
``seconds`` and the whole cycle: log sync + core + decisions' write); the probe's submit
latency; the drain rate (backlog jobs / seconds from the executors' start to the last end);
the server's and PostgreSQL's CPU per 1,000 jobs in each phase. ``rss_high_water_mb`` is the
kernel's peak (``VmHWM``) of the server that drained, between samples included. ``--restart``
restarts the server after the load, before the drain: the new one loads the backlog from the
views (``restart_seconds`` until it answers, its RSS then and at its peak).

Loading 1,000,000 jobs takes minutes on a quiet host and over an hour on a busy one, so a
loaded backlog can be kept and reused (PostgreSQL): ``--save-template NAME`` copies the
database under NAME after the load (the server stopped for the copy, then restarted as with
``--restart``); ``--template NAME`` starts from a copy of NAME instead of loading (``--jobs``
must match the jobs it holds): the server's start-up is then the restart. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from sqlalchemy import func, select

from armada.client import AsyncArmadaClient, ClientConfig
from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.dialects import libpq_conninfo, normalise_url
from armada.model.queues import Queue
from bench.common import database_arguments, report, workload_arguments
from bench.e2e import (
    cluster_arguments,
    database,
    job_item,
    start_executors,
    start_server,
    submit_all,
    usage_of,
    wait_for_executors,
)
from bench.usage import Usage, lane_counters, lane_figures, tree_rss_mb
from tests.processes import ArmadaProcess

ACTIVE = ["QUEUED", "LEASED", "PENDING", "RUNNING"]
SERVER_LOG = {"ARMADA_LOGGING_LEVEL": "info"}  # busy scheduling cycles are logged at info


def server_env(args: argparse.Namespace) -> dict[str, str]:
    """The server's environment: info logs and ``--server-env`` settings."""
    return SERVER_LOG | dict(setting.split("=", 1) for setting in args.server_env)


PROBE_QUEUE = "probe"


def quantiles(values: list[float], prefix: str, scale: float = 1.0, digits: int = 3) -> dict[str, float]:
    """p50, p95, p99 and max of ``values`` (times ``scale``) as ``prefix_p50`` ..."""
    if not values:
        return {}
    ordered = sorted(values)
    at = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
    result = {
        f"{prefix}_{name}": round(ordered[int(q * (len(ordered) - 1))] * scale, digits)
        for name, q in at.items()
    }
    result[f"{prefix}_max"] = round(ordered[-1] * scale, digits)
    return result


class RssSampler:
    """Samples the server tree's RSS in the background, each sample tagged with the phase."""

    def __init__(self, pid: int, interval: float) -> None:
        self.pid = pid
        self._interval = interval
        self.phase = "start"
        self.samples: list[tuple[str, float]] = []

    async def run(self) -> None:
        while True:
            self.samples.append((self.phase, tree_rss_mb(self.pid)))
            await asyncio.sleep(self._interval)

    def of(self, phase: str) -> list[float]:
        return [mb for tagged, mb in self.samples if tagged == phase]

    def figures(self) -> dict[str, float]:
        def last(phase: str) -> float:
            return round(self.of(phase)[-1], 1) if self.of(phase) else 0.0

        drain = self.of("drain")
        return {
            "rss_idle_mb": last("start"),
            "rss_after_load_mb": last("load"),
            "rss_drain_median_mb": round(statistics.median(drain), 1) if drain else 0.0,
            "rss_peak_mb": round(max(mb for _, mb in self.samples), 1),
            "rss_end_mb": last("end"),
        }


class Probe:
    """Submits small batches at a steady rate (open loop) and records each call's latency."""

    def __init__(self, client: AsyncArmadaClient, batch: int, interval: float) -> None:
        self._client = client
        self._items = [job_item("sleep 1")] * batch
        self._interval = interval
        self.latencies: list[float] = []
        self.submitted = 0

    async def _one(self) -> None:
        started = time.perf_counter()
        ids = await self._client.submit_jobs(PROBE_QUEUE, "probe", self._items)
        self.latencies.append(time.perf_counter() - started)
        self.submitted += len(ids)

    async def run(self, stop: asyncio.Event) -> None:
        calls: set[asyncio.Task[None]] = set()
        start = time.perf_counter()
        tick = 0
        stopped = asyncio.create_task(stop.wait())
        while not stop.is_set():
            task = asyncio.create_task(self._one())
            calls.add(task)
            task.add_done_callback(calls.discard)
            tick += 1
            delay = start + tick * self._interval - time.perf_counter()
            if delay > 0:
                await asyncio.wait([stopped], timeout=delay)
        if calls:
            await asyncio.gather(*calls)


async def active_jobs(db: Database) -> int:
    async with db.engine.connect() as conn:
        count = await conn.scalar(
            select(func.count()).select_from(schema.jobs).where(schema.jobs.c.state.in_(ACTIVE))
        )
    return int(count or 0)


async def drain(
    url: str, args: argparse.Namespace, processes: list[ArmadaProcess], probe_stop: asyncio.Event
) -> tuple[float, int]:
    """Poll the jobs view until no job is active (or ``--drain-seconds`` passed); stop the
    probe at 99% drained. Return when it ended and the jobs still active then."""
    db = await Database(url).open(migrate_schema=False, listen=False)
    try:
        started = time.monotonic()
        deadline = started + args.timeout
        while time.monotonic() < deadline:
            active = await active_jobs(db)
            if active <= args.jobs // 100 or (
                args.drain_seconds and time.monotonic() - started >= args.drain_seconds
            ):
                probe_stop.set()
            if probe_stop.is_set() and (active == 0 or args.drain_seconds):
                return time.perf_counter(), active
            for process in processes:
                if process.process.poll() is not None:
                    tail = process.log().splitlines()[-5:]
                    raise SystemExit(f"{process.args[0]} exited early:\n" + "\n".join(tail))
            await asyncio.sleep(args.poll_interval)
        raise SystemExit(f"backlog not drained after {args.timeout} s ({active} jobs active)")
    finally:
        await db.close()


async def check_template(url: str, jobs: int) -> None:
    """A copied backlog must hold ``jobs`` queued jobs (the drain counts them)."""
    db = await Database(url).open(migrate_schema=False, listen=False)
    try:
        held = await active_jobs(db)
    finally:
        await db.close()
    if held != jobs:
        raise SystemExit(f"--template holds {held} active jobs, not --jobs {jobs}")


def cycles(log_path: Path) -> dict[str, Any]:
    """The scheduling cycles the server logged (busy ones: info level).

    ``cycle_s`` is log sync + core + the wait for the previous cycle's append (cycles
    overlap: a cycle's own decisions are appended while the next one is computed);
    ``cycle_committed_s`` runs from a cycle's start until its decisions were committed, and
    ``decisions_write_s`` is that append alone (servers that log ``scheduling decisions
    written``); ``cycle_core_cpu_s`` is the core's CPU time, with the history's bookkeeping
    (servers that log ``cpu_seconds``).
    """
    core: list[float] = []
    core_cpu: list[float] = []
    whole: list[float] = []
    sync: list[float] = []
    wait: list[float] = []
    committed: list[float] = []
    written: list[float] = []
    for line in log_path.read_text(errors="replace").splitlines():
        if '"scheduling ' not in line:
            continue
        record = json.loads(line)
        if record.get("event") == "scheduling decisions written":
            committed.append(record["cycle_seconds"])
            written.append(record["write_seconds"])
        if record.get("event") != "scheduling cycle" or "seconds" not in record:
            continue
        core.append(record["seconds"])
        if "cpu_seconds" in record:
            core_cpu.append(record["cpu_seconds"])
        sync.append(record["sync_seconds"])
        waited = record.get("write_seconds", record.get("wait_seconds", 0.0))  # before overlapped cycles
        wait.append(waited)
        whole.append(record["seconds"] + record["sync_seconds"] + waited)
    return {
        "cycles": len(core),
        **quantiles(whole, "cycle_s"),
        **quantiles(core, "cycle_core_s"),
        **quantiles(core_cpu, "cycle_core_cpu_s"),
        **quantiles(sync, "cycle_sync_s"),
        **quantiles(wait, "cycle_wait_s"),
        **quantiles(committed, "cycle_committed_s"),
        **quantiles(written, "decisions_write_s"),
    }


def save_template(url: str, name: str) -> None:
    """Copy the (idle) database at ``url`` to a new database ``name``, replacing one of that name."""
    parsed = normalise_url(url)
    admin = libpq_conninfo(parsed.set(database="postgres").render_as_string(hide_password=False))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{parsed.database}" STRATEGY FILE_COPY')


def restart(
    stack: ExitStack, args: argparse.Namespace, workdir: Path, url: str, server: ArmadaProcess
) -> tuple[str, ArmadaProcess, dict[str, float]]:
    """Stop the server and start another on the same database: it loads the backlog from the
    views. With ``--save-template`` the database is copied while no server runs."""
    server.stop()
    if args.save_template:
        save_template(url, args.save_template)
    started = time.perf_counter()
    base, server = start_server(stack, args, workdir, url, server_env(args), health_timeout=args.timeout)
    pid = server.process.pid
    return (
        base,
        server,
        {
            "restart_seconds": round(time.perf_counter() - started, 1),
            "rss_after_restart_mb": round(tree_rss_mb(pid), 1),
            "rss_restart_peak_mb": round(tree_rss_mb(pid, "VmHWM"), 1),
        },
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        url = stack.enter_context(database(args.database_url, workdir, args.template))
        started = time.perf_counter()
        base, server = start_server(stack, args, workdir, url, server_env(args), health_timeout=args.timeout)
        restarted: dict[str, float] = {}
        if args.template:  # the backlog is there: the server's start-up loaded it from the views
            restarted = {
                "restart_seconds": round(time.perf_counter() - started, 1),
                "rss_after_restart_mb": round(tree_rss_mb(server.process.pid), 1),
                "rss_restart_peak_mb": round(tree_rss_mb(server.process.pid, "VmHWM"), 1),
            }
            await check_template(url, args.jobs)
        usage = usage_of(server, [], base, url)  # executors start later: the server alone
        rss = RssSampler(server.process.pid, args.sample_interval)
        sampler = asyncio.create_task(rss.run())
        load_seconds, before_load, after_load = 0.0, usage.sample(), usage.sample()
        if not args.template:
            async with AsyncArmadaClient(ClientConfig(armada_url=base, timeout=120)) as client:
                queues = [Queue(name=f"queue-{q}") for q in range(args.queues)] + [Queue(name=PROBE_QUEUE)]
                await client.create_queues(queues)
                await asyncio.sleep(2 * args.sample_interval)
                rss.phase = "load"
                before_load = usage.sample()
                started = time.perf_counter()
                await submit_all(client, args)
                load_seconds = time.perf_counter() - started
                rss.samples.append(("load", tree_rss_mb(server.process.pid)))
                after_load = usage.sample()
        if (args.restart or args.save_template) and not args.template:
            rss.phase = "restart"
            base, server, restarted = restart(stack, args, workdir, url, server)
            rss.pid = server.process.pid
            usage = usage_of(server, [], base, url)  # executors start later: the server alone
        before_drain = usage.sample()
        lanes_before = lane_counters(base)

        rss.phase = "drain"
        drain_started = time.perf_counter()
        executors = start_executors(stack, args, workdir, base)
        async with AsyncArmadaClient(ClientConfig(armada_url=base, timeout=120)) as probe_client:
            await wait_for_executors(url, args.executors * args.clusters_per_executor)
            probe = Probe(probe_client, args.probe_batch, args.probe_interval)
            probe_stop = asyncio.Event()
            probing = asyncio.create_task(probe.run(probe_stop))
            ended, left = await drain(url, args, [server, *executors], probe_stop)
            await probing
        after_drain = usage.sample()
        lanes = lane_figures(lanes_before, lane_counters(base))
        sampler.cancel()
        rss.samples.append(("end", tree_rss_mb(server.process.pid)))
        high_water = tree_rss_mb(server.process.pid, "VmHWM")
        drain_seconds = ended - drain_started
        drained = args.jobs + probe.submitted - left
        load_usage = Usage.figures(before_load, after_load, args.jobs)
        drain_usage = Usage.figures(before_drain, after_drain, drained)
        return {
            "benchmark": "backlog",
            "database": normalise_url(url).get_backend_name(),
            "jobs": args.jobs,
            "executors": args.executors,
            "clusters_per_executor": args.clusters_per_executor,
            "nodes_per_executor": args.nodes_per_executor,
            "template": args.template,
            "load_seconds": round(load_seconds, 1),
            "load_jobs_per_second": round(args.jobs / load_seconds, 1) if load_seconds else 0.0,
            **restarted,
            "drain_seconds": round(drain_seconds, 1),
            "drained_jobs": drained,
            "drain_jobs_per_second": round(drained / drain_seconds, 1),
            **rss.figures(),
            "rss_high_water_mb": round(high_water, 1),
            **cycles(workdir / "serve.log"),
            "probe_calls": len(probe.latencies),
            "probe_jobs": probe.submitted,
            **quantiles(probe.latencies, "submit_ms", 1000, 1),
            **{f"load_{k}": v for k, v in load_usage.items()},
            **{f"drain_{k}": v for k, v in drain_usage.items()},
            **{f"drain_lane_{k}": v for k, v in lanes.items()},
        }


def main() -> None:
    parser = database_arguments(__doc__, "postgresql://postgres@127.0.0.1:5432/postgres")
    workload_arguments(parser, jobs=1_000_000, batch=1000)
    cluster_arguments(parser, timeout=3600)
    parser.add_argument("--probe-batch", type=int, default=10)
    parser.add_argument("--probe-interval", type=float, default=0.2)
    parser.add_argument("--sample-interval", type=float, default=1.0)
    parser.add_argument("--poll-interval", type=float, default=2.0)
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="ARMADA_X=VALUE",
        help="a setting for the server (repeatable), e.g. ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_BURST=5000",
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=0.0,
        help="stop the drain after this many seconds (0: when every job ended); the figures cover that part",
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="restart the server after the load (it loads the backlog from the views) before the drain",
    )
    parser.add_argument(
        "--save-template",
        default="",
        metavar="NAME",
        help="PostgreSQL: after the load, copy the database to NAME (replaced if it exists) for --template",
    )
    parser.add_argument(
        "--template",
        default="",
        metavar="NAME",
        help="PostgreSQL: start from a copy of NAME (a backlog --save-template kept) instead of loading",
    )
    args = parser.parse_args()
    args.backend, args.command = "fake", "sleep 1"  # what bench/e2e.py's pieces read
    os.environ.setdefault("ARMADA_LOGGING_FORMAT", "json")
    report(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
