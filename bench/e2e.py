"""End-to-end throughput: real server and executor processes, jobs submitted over HTTP.

    python bench/e2e.py --database-url URL --executors 2 --nodes-per-executor 2500 \\
        --jobs 100000 --queues 10
    python bench/e2e.py --backend process --process-cpu 256 --jobs 2000 --queues 1 \\
        --command date            # the Slurm comparison (tools/slurm_peer.sh)

Every figure comes from the event log: ``jobs_per_second`` is jobs / (last ``succeeded``
- first ``submitted``), lease latency is ``leased`` - ``submitted`` per job. With
``--idle-jobs N`` it also submits N single jobs one at a time into the idle system and
reports the submit-to-start latency (the job's own start stamp for ``--command date``,
else the ``running`` event). ``--client-wall`` also measures as a user would: from the
first submit call until ``POST /v1/job/status`` (polled twice a second) shows every job
SUCCEEDED. Where the time goes: the server's CPU seconds (its process tree), the executors' and the
server's PostgreSQL backends' per 1,000 jobs, and the append lock's busy fraction, all over the
window from the first submit call to the moment every job has ended. A PostgreSQL URL
names a server: the benchmark creates a fresh database there and drops it afterwards; with
``--template NAME`` the fresh database is a copy of NAME (say one holding a backlog of expired
jobs that ``bench/retention.py --copies`` filled, the server run with ``--server-env
ARMADA_RETENTION_EXPIRE_AFTER=24h`` to prune it meanwhile), and only the events after its
head are measured. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from sqlalchemy import func, select

from armada.client import AsyncArmadaClient, ClientConfig
from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.dialects import libpq_conninfo, normalise_url
from armada.model import events as ev
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from bench.common import database_arguments, report, workload_arguments
from bench.usage import Sample, Usage
from tests.processes import (
    EXECUTOR_TOKEN_ENV,
    SERVER_EXECUTOR_TOKEN_ENV,
    ArmadaProcess,
    free_port,
    wait_until_healthy,
)

SERVER_ENV = {
    "ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_RATE": "1000000",
    "ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_BURST": "1000000",
    "ARMADA_SCHEDULING_MAXIMUM_PER_QUEUE_SCHEDULING_RATE": "1000000",
    "ARMADA_SCHEDULING_MAXIMUM_PER_QUEUE_SCHEDULING_BURST": "1000000",
    "ARMADA_SCHEDULER_CYCLE_PERIOD": "0.5",
    "ARMADA_LOGGING_LEVEL": os.environ.get("BENCH_SERVER_LOG_LEVEL", "warning"),
}


#: Job ids per ``POST /v1/job/status`` call (the server's limit).
STATUS_IDS = 10_000


@contextmanager
def database(url: str, workdir: Path, template: str = "") -> Iterator[str]:
    """A fresh database: a SQLite file in ``workdir`` or a new PostgreSQL database (a copy of
    ``template`` if given)."""
    if not url.startswith("postgres"):
        yield f"sqlite:///{workdir / 'armada.db'}"
        return
    name = f"armada_bench_{uuid.uuid4().hex[:10]}"
    copy = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
    with psycopg.connect(libpq_conninfo(url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    try:
        yield normalise_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(libpq_conninfo(url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_server(
    stack: ExitStack,
    args: argparse.Namespace,
    workdir: Path,
    url: str,
    env: dict[str, str] | None = None,
    health_timeout: float = 60,
) -> tuple[str, ArmadaProcess]:
    """``armada serve`` on a free port (``env`` over :data:`SERVER_ENV`); its base URL and process."""
    port = free_port()
    server = ArmadaProcess(
        ["serve", "--port", str(port), "--database-url", url]
        + (["--workers", str(args.server_workers)] if url.startswith("postgres") else []),
        cwd=workdir,
        log_path=workdir / "serve.log",
        env={**SERVER_ENV, **SERVER_EXECUTOR_TOKEN_ENV, **(env or {})},
    )
    stack.callback(server.stop)
    base = f"http://127.0.0.1:{port}"
    wait_until_healthy(base, server, health_timeout)
    return base, server


def start_executors(
    stack: ExitStack, args: argparse.Namespace, workdir: Path, base: str
) -> list[ArmadaProcess]:
    """``--executors`` executor processes of ``--backend`` against the server at ``base``, each
    serving ``--clusters-per-executor`` clusters (``cluster-<i>``, or ``cluster-<i>-<j>``)."""
    processes = []
    for index in range(args.executors):
        command = [
            "executor",
            "--server",
            base,
            "--cluster-id",
            f"cluster-{index}",
            "--backend",
            args.backend,
        ]
        if args.clusters_per_executor > 1:
            command += ["--clusters", str(args.clusters_per_executor)]
        if args.backend == "fake":
            command += ["--fake-nodes", str(args.nodes_per_executor), "--fake-node-cpu", "64"]
            command += ["--fake-node-memory", "512Gi"]
        else:
            command += ["--process-cpu", str(args.process_cpu), "--process-memory", "1Ti"]
            command += ["--process-state-dir", str(workdir / f"process-state-{index}")]
        executor = ArmadaProcess(
            command,
            cwd=workdir,
            log_path=workdir / f"executor-{index}.log",
            env={
                "ARMADA_LOGGING_LEVEL": "warning",
                **EXECUTOR_TOKEN_ENV,
                **settings_given(args, "executor_env"),
            },
        )
        stack.callback(executor.stop)
        processes.append(executor)
    return processes


def settings_given(args: argparse.Namespace, option: str) -> dict[str, str]:
    """The ``ARMADA_X=VALUE`` settings an ``--server-env``-like option gave (none if it is absent)."""
    return dict(setting.split("=", 1) for setting in getattr(args, option, []))


def start_system(
    stack: ExitStack, args: argparse.Namespace, workdir: Path, url: str, health_timeout: float = 60
) -> tuple[str, list[ArmadaProcess]]:
    base, server = start_server(stack, args, workdir, url, settings_given(args, "server_env"), health_timeout)
    return base, [server, *start_executors(stack, args, workdir, base)]


def job_item(command: str) -> JobSubmitRequestItem:
    resources = {"cpu": "100m", "memory": "64Mi"}
    return JobSubmitRequestItem(
        namespace="default",
        pod_spec={
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "alpine:3.20",
                    "args": command.split(),
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
        },
    )


async def submit_all(
    client: AsyncArmadaClient,
    args: argparse.Namespace,
    in_flight: int = 4,
    latencies: list[float] | None = None,
    submitted: Callable[[str, list[str]], None] | None = None,
) -> list[str]:
    """Submit ``--jobs`` jobs in batches, spread over the queues, ``in_flight`` requests at a
    time; each call's seconds are appended to ``latencies`` and its queue and job ids passed to
    ``submitted`` when given."""
    item = job_item(args.command)
    count = -(-args.jobs // args.batch)
    batches = [(f"queue-{b % args.queues}", "bench") for b in range(count)]  # round robin
    semaphore = asyncio.Semaphore(in_flight)

    async def one(index: int, queue: str, job_set: str) -> list[str]:
        size = min(args.batch, args.jobs - index * args.batch)
        async with semaphore:
            began = time.perf_counter()
            ids = await client.submit_jobs(queue, job_set, [item] * size)
        if latencies is not None:
            latencies.append(time.perf_counter() - began)
        if submitted is not None:
            submitted(queue, ids)
        return ids

    answers = await asyncio.gather(*(one(i, q, s) for i, (q, s) in enumerate(batches)))
    return [job_id for ids in answers for job_id in ids]


async def wait_for_executors(url: str, count: int) -> None:
    """Submitting before the executors have reported their nodes would time their start-up."""
    database = await Database(url).open(migrate_schema=False, listen=False)
    try:
        while True:
            async with database.engine.connect() as conn:
                joined = await conn.scalar(select(func.count()).select_from(schema.executors))
            if joined is not None and joined >= count:
                return
            await asyncio.sleep(0.2)
    finally:
        await database.close()


async def log_head(url: str) -> tuple[int, int]:
    """The log's newest sequence number and the jobs held (a database copied from a template
    holds some: how many went says what retention pruned meanwhile)."""
    database = await Database(url).open(migrate_schema=False, listen=False)
    try:
        async with database.engine.connect() as conn:
            jobs = await conn.scalar(select(func.count()).select_from(schema.job_states))
        return await database.store.head(), int(jobs or 0)
    finally:
        await database.close()


async def wait_finished(
    url: str, jobs: int, timeout: float, processes: list[ArmadaProcess], after: int = 0
) -> None:
    """Follow the log until every job has ended.

    Measuring from the database keeps the benchmark from loading the server with watchers.
    Each poll reads only the events appended since the last one: counting the finished jobs
    in the ``jobs`` view scanned the whole table (80 ms of PostgreSQL's CPU a poll at 100,000
    jobs, counted in ``postgres_cpu_s_per_1000_jobs`` and taken from the system measured).
    A server or executor that exits ends the benchmark with its log's last lines.
    """
    events = schema.events
    ended = events.c.type.in_(["succeeded", "failed", "cancelled", "preempted"])
    database = await Database(url).open(migrate_schema=False, listen=False)
    try:
        deadline = time.monotonic() + timeout
        finished: set[str] = set()
        while time.monotonic() < deadline:
            async with database.engine.connect() as conn:
                head = await conn.scalar(select(func.coalesce(func.max(events.c.seq), 0)))
                new = select(events.c.job_id).where(events.c.seq > after, events.c.seq <= head, ended)
                finished.update(await conn.scalars(new))
            after = head or after
            if len(finished) >= jobs:
                return
            for process in processes:
                if process.process.poll() is not None:
                    tail = process.log().splitlines()[-5:]
                    raise SystemExit(f"{process.args[0]} exited early:\n" + "\n".join(tail))
            await asyncio.sleep(0.5)
    finally:
        await database.close()


async def read_log(url: str, after: int = 0) -> list[ev.Event]:
    """Every event of the log after ``after``, oldest first."""
    database = await Database(url).open(migrate_schema=False, listen=False)
    try:
        events: list[ev.Event] = []
        while batch := await database.store.read(after, limit=20_000):
            events += [stored.event for stored in batch]
            after = batch[-1].seq
        return events
    finally:
        await database.close()


async def wait_succeeded_by_status(client: AsyncArmadaClient, job_ids: list[str], timeout: float) -> None:
    """Poll ``POST /v1/job/status`` twice a second, as a user's script would, until all SUCCEEDED."""
    pending = list(job_ids)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        states: dict[str, str] = {}
        for start in range(0, len(pending), STATUS_IDS):  # the most one call may ask about
            states |= await client.job_status(pending[start : start + STATUS_IDS])
        pending = [job_id for job_id in pending if states.get(job_id) != "SUCCEEDED"]
        if pending:
            await asyncio.sleep(0.5)
    if pending:
        raise SystemExit(f"{len(pending)} jobs not SUCCEEDED after {timeout} s")


def throughput(events: list[ev.Event]) -> dict[str, Any]:
    submitted = {e.job_id: e.created.timestamp() for e in events if e.type == "submitted"}
    leased = {e.job_id: e.created.timestamp() for e in events if e.type == "leased"}
    ended = [e.created.timestamp() for e in events if e.type in ("succeeded", "failed")]
    latencies = sorted(leased[j] - submitted[j] for j in leased if j in submitted)
    span = max(ended) - min(submitted.values())
    return {
        "jobs_per_second": round(len(ended) / span, 1),
        "seconds": round(span, 2),
        "succeeded": sum(1 for e in events if e.type == "succeeded"),
        "failed": sum(1 for e in events if e.type == "failed"),
        "lease_latency_p50_s": round(statistics.median(latencies), 3),
        "lease_latency_p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
    }


def client_gap(events: list[ev.Event], started: float, seen: float) -> dict[str, float]:
    """Where the client's wall clock differs from the log's span: before the first
    ``submitted`` event, and from the last ``succeeded`` until the client saw it."""
    first = min(e.created.timestamp() for e in events if e.type == "submitted")
    last = max(e.created.timestamp() for e in events if e.type == "succeeded")
    return {
        "client_before_first_submitted_s": round(first - started, 3),
        "client_after_last_end_s": round(seen - last, 3),
    }


async def idle_latency(client: AsyncArmadaClient, count: int, command: str) -> dict[str, Any]:
    """Submit single jobs into the idle system; time from just before submit to start."""
    samples = []
    for _ in range(count):
        before = time.time()
        [job_id] = await client.submit_jobs("queue-0", "idle", [job_item(command)])
        async for message in client.job_set_events("queue-0", "idle", watch=True):
            if message.event.job_id == job_id and message.event.type in ("running", "failed"):
                break
        samples.append(message.event.created.timestamp() - before)
        await asyncio.sleep(0.3)
    return {"idle_submit_to_running_p50_ms": round(statistics.median(samples) * 1000, 1)}


def usage_of(server: ArmadaProcess, executors: list[ArmadaProcess], base: str, url: str) -> Usage:
    parsed = normalise_url(url)
    pids = [executor.process.pid for executor in executors]
    if parsed.get_backend_name() != "postgresql":
        return Usage(server.process.pid, base, None, pids)  # SQLite works inside the server process
    conninfo = libpq_conninfo(parsed.set(database="postgres").render_as_string(hide_password=False))
    return Usage(server.process.pid, base, (conninfo, str(parsed.database)), pids)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        url = stack.enter_context(database(args.database_url, workdir, args.template))
        # A copied backlog of millions of jobs takes the server longer to start on a busy host.
        base, processes = start_system(stack, args, workdir, url, 600 if args.template else 60)
        origin, held = await log_head(url)
        usage = usage_of(processes[0], processes[1:], base, url)
        async with AsyncArmadaClient(ClientConfig(armada_url=base, timeout=120)) as client:
            await client.create_queues([Queue(name=f"queue-{q}") for q in range(args.queues)])
            await wait_for_executors(url, args.executors * args.clusters_per_executor)
            before: Sample = usage.sample()
            started, started_wall = time.perf_counter(), time.time()
            job_ids = await submit_all(client, args)
            submit_seconds = time.perf_counter() - started
            result: dict[str, Any] = {}
            if args.client_wall:
                await wait_succeeded_by_status(client, job_ids, args.timeout)
                wall, seen_wall = time.perf_counter() - started, time.time()
                result["client_wall_s"] = round(wall, 2)
                result["client_jobs_per_second"] = round(args.jobs / wall, 1)
            await wait_finished(url, args.jobs, args.timeout, processes, origin)
            after = usage.sample()
            events = await read_log(url, origin)
            if args.template:
                result["template_jobs_pruned"] = held + args.jobs - (await log_head(url))[1]
            if args.client_wall:
                result |= client_gap(events, started_wall, seen_wall)
            result = {
                "benchmark": "e2e",
                "database": normalise_url(url).get_backend_name(),
                "backend": args.backend,
                "executors": args.executors,
                "jobs": args.jobs,
                "submit_seconds": round(submit_seconds, 2),
                **throughput(events),
                **result,
                **Usage.figures(before, after, args.jobs),
            }
            if args.idle_jobs:
                result |= await idle_latency(client, args.idle_jobs, args.command)
            return result


def cluster_arguments(parser: argparse.ArgumentParser, timeout: float) -> None:
    """What :func:`start_server` and :func:`start_executors` read, and where their logs go."""
    parser.add_argument("--executors", type=int, default=2, help="executor processes")
    parser.add_argument(
        "--clusters-per-executor", type=int, default=1, help="clusters each executor process serves"
    )
    parser.add_argument("--nodes-per-executor", type=int, default=2500, help="nodes per cluster")
    parser.add_argument(
        "--server-workers", type=int, default=1, help="armada serve --workers (PostgreSQL only)"
    )
    parser.add_argument("--timeout", type=float, default=timeout)
    parser.add_argument("--workdir", default="", help="keep logs here instead of a temporary directory")


def main() -> None:
    parser = database_arguments(__doc__, "sqlite")
    workload_arguments(parser, jobs=100_000, batch=500)
    cluster_arguments(parser, timeout=1800)
    parser.add_argument("--backend", choices=["fake", "process"], default="fake")
    parser.add_argument("--process-cpu", type=int, default=256)
    parser.add_argument("--command", default="sleep 1", help="the jobs' command line (args)")
    parser.add_argument("--idle-jobs", type=int, default=0)
    parser.add_argument("--template", default="", help="PostgreSQL: copy this database (e.g. a backlog)")
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting (e.g. ARMADA_SCHEDULING_FORECAST_INTERVAL=0); repeatable",
    )
    parser.add_argument(
        "--client-wall",
        action="store_true",
        help="also time first submit call -> all SUCCEEDED by POST /v1/job/status, polled twice a second",
    )
    args = parser.parse_args()
    os.environ.setdefault("ARMADA_LOGGING_FORMAT", "json")
    report(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
