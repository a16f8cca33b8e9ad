"""Fleet scale: many clusters, queues, watchers and status pollers against one server.

    python bench/fleet.py --database-url postgresql://postgres@127.0.0.1:5432/postgres --shape tidy
    python bench/fleet.py --database-url ... --shape realistic     # 20 clusters x 500 queues x 200 watchers
    python bench/fleet.py --database-url ... --shape big-cluster   # one cluster of 2,500 nodes
    python bench/fleet.py --database-url ... --shape realistic --watchers 1000 --pollers 1000

A shape sets the defaults (``--shape`` list below); any option given overrides it. The fake
clusters run in one executor process (``armada executor --clusters``) unless
``--executors`` says otherwise, so the benchmark measures the server, not tens of
interpreters. Every watcher follows one job set (``queue-<i>``, ``bench``) over HTTP from
before the first submit; every poller calls ``POST /v1/job/status`` once per
``--poll-interval`` with the ids of its queue's jobs, as Airflow's sensors do, while jobs flow.

Figures: ``client_jobs_per_second`` is jobs / (first submit call -> every job SUCCEEDED by
``POST /v1/job/status``); lease latency (``leased`` - ``submitted``) from the log; each submit
call's latency; a watcher's delivery delay is its receipt time - the event's ``created``
stamp (taken before the append is committed: for run events, when the executor saw them, so
it counts the executor's report too), and on PostgreSQL its receipt time - the commit's
``NOTIFY`` heard here (``watch_delay_after_commit``); leased -> pending and running ->
succeeded by the events' stamps (the executor's pick-up; the run and its timer); the events
every watcher missed (0 when all were delivered); the status calls' latency; the server's
and PostgreSQL's CPU per 1,000 jobs; the server's peak RSS; the scheduling cycles it logged;
where the user's wait after the last job's end went (its ``succeeded`` stamp -> its commit
-> the status call that saw it).
The benchmark's own client shares the machine: the watchers and pollers run in
``--client-processes`` processes of their own (:mod:`bench.fleet_clients`), which report
their CPU seconds and their event loops' lag (as the submitting process does its own), and
the server's loop lag comes from its ``armada_event_loop_lag_seconds`` histogram. The
50,000-node, 1,000,000-queued shape is ``bench/backlog.py --executors 1
--clusters-per-executor 20 --nodes-per-executor 2500 --jobs 1000000``. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import psycopg

from armada.eventstore.dialects import NOTIFY_CHANNEL, libpq_conninfo, normalise_url
from armada.model import events as ev
from armada.model.queues import Queue
from bench.backlog import cycles, quantiles, server_env
from bench.common import cpu_seconds, database_arguments, report, workload_arguments
from bench.e2e import (
    client_gap,
    cluster_arguments,
    database,
    read_log,
    start_executors,
    start_server,
    submit_all,
    throughput,
    usage_of,
    wait_finished,
    wait_for_executors,
    wait_succeeded_by_status,
)
from bench.fleet_clients import ClientProcesses, LoopLag, Measured, unlimited_client
from bench.usage import Usage, tree_rss_mb

#: The issue's shapes: 10,000 fake nodes and 40,000 five-second jobs unless said otherwise.
SHAPES: dict[str, dict[str, Any]] = {
    "tidy": {"clusters": 2, "queues": 10, "batch": 500, "watchers": 10},
    "clusters": {"clusters": 20, "queues": 10, "batch": 500, "watchers": 10},
    "queues": {"clusters": 2, "queues": 500, "batch": 80, "watchers": 10},
    "realistic": {"clusters": 20, "queues": 500, "batch": 80, "watchers": 200},
    "big-cluster": {"clusters": 1, "nodes": 2500, "jobs": 20_000, "command": "sleep 1", "watchers": 0},
}
DEFAULTS: dict[str, Any] = {
    "nodes": 10_000,
    "jobs": 40_000,
    "command": "sleep 5",
    "queues": 10,
    "batch": 500,
    "pollers": 0,
}


class CommitClock:
    """When each seq committed, as PostgreSQL's ``NOTIFY`` of the commit reaches this process
    (the server notifies the last seq of every commit): a watcher's delay from the commit."""

    def __init__(self, url: str) -> None:
        self._url = url
        self.seqs: list[int] = []
        self.times: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._url.startswith("postgres"):
            conn = await psycopg.AsyncConnection.connect(libpq_conninfo(self._url), autocommit=True)
            await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            self._task = asyncio.create_task(self._listen(conn))

    async def _listen(self, conn: psycopg.AsyncConnection[Any]) -> None:
        async with conn:
            async for message in conn.notifies():
                seq = int(message.payload)
                if not self.seqs or seq > self.seqs[-1]:
                    self.seqs.append(seq)
                    self.times.append(time.time())

    def committed(self, seq: int) -> float | None:
        """When ``seq`` was heard committed (None: not heard)."""
        at = bisect.bisect_left(self.seqs, seq)
        return self.times[at] if at < len(self.seqs) else None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def delays_after_commit(receipts: list[tuple[int, float]], clock: CommitClock) -> list[float]:
    """Each delivery's delay from its event's commit (as :class:`CommitClock` heard it)."""
    return [now - at for seq, now in receipts if (at := clock.committed(seq)) is not None]


def client_figures(measured: list[Measured], own_lags: list[float]) -> dict[str, Any]:
    """The client processes' CPU and their loops' lag (and the submitting process's): a
    lag near the status latency would say the client, not the server, was slow."""
    lags = [lag for m in measured for lag in m.loop_lags]
    return {
        "client_processes": len(measured),
        "client_processes_cpu_s": round(sum(m.cpu_s for m in measured), 1),
        **quantiles(lags, "client_loop_lag_ms", scale=1000, digits=1),
        **quantiles(own_lags, "submitter_loop_lag_ms", scale=1000, digits=1),
    }


def last_end(events: list[ev.Event], clock: CommitClock, seen: float) -> dict[str, float]:
    """Where the user's wait after the last job's end went: from its ``succeeded`` stamp
    (the executor's) to its commit (the report's way to the server and its append), and
    from the commit to the client's status call seeing it. ``events`` is the whole log from
    seq 1 (dense), so the last ``succeeded`` in it is the last to commit."""
    last = max((seq for seq, event in enumerate(events, start=1) if event.type == "succeeded"), default=0)
    committed = clock.committed(last) if last else None
    if committed is None:
        return {}
    return {
        "last_end_to_commit_s": round(committed - events[last - 1].created.timestamp(), 3),
        "last_commit_to_client_s": round(seen - committed, 3),
    }


def stages(events: list[ev.Event]) -> dict[str, float]:
    """How long each step of a job's path took (p50/p99), by the events' ``created`` stamps:
    leased -> pending is the executor's pick-up (the lease call, starting the run), running ->
    succeeded the run itself plus the fake backend's timer."""
    at: dict[str, dict[str, float]] = {"leased": {}, "pending": {}, "running": {}, "succeeded": {}}
    for event in events:
        if event.type in at:
            at[event.type][event.job_id] = event.created.timestamp()
    figures: dict[str, float] = {}
    for before, after in (("leased", "pending"), ("running", "succeeded")):
        spans = [t - at[before][j] for j, t in at[after].items() if j in at[before]]
        found = quantiles(spans, f"{before}_to_{after}_s")
        figures |= {k: v for k, v in found.items() if k.endswith(("p50", "p99"))}
    return figures


#: The server's request-duration histogram (to the start of each response).
HTTP_SECONDS = "armada_http_request_duration_seconds"
#: The server's event-loop lag histogram (how late a 0.1 s sleep wakes).
LOOP_LAG_SECONDS = "armada_event_loop_lag_seconds"


def _buckets(text: str, name: str, selector: str) -> Counter[float]:
    """The cumulative counts of histogram ``name``'s buckets, summed over the series whose
    labels hold ``selector``."""
    buckets: Counter[float] = Counter()
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{") and selector in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets[float(le)] += int(float(line.rsplit(" ", 1)[1]))
    return buckets


def _share_and_p99(buckets: Counter[float], within: float, prefix: str) -> dict[str, float]:
    """The share of observations within ``within`` s and the bucket holding the 99th percentile."""
    total = buckets.get(float("inf"), 0)
    if not total:
        return {}
    p99 = min(le for le, count in buckets.items() if count >= 0.99 * total)
    share = f"{prefix}_within_{round(within * 1000)}ms"
    return {share: round(buckets[within] / total, 4), f"{prefix}_p99_le_s": p99}


def server_histograms(base: str) -> tuple[Counter[float], Counter[float]]:
    """The server's histograms of its own time on ``POST /v1/job/status`` (from the call
    reaching the app to the start of the answer: without the client's and the transport's
    queueing) and of its event loop's lag (each await of a request waits about as long)."""
    names = {"name[]": [f"{HTTP_SECONDS}_bucket", f"{LOOP_LAG_SECONDS}_bucket"]}
    text = httpx.get(f"{base}/metrics", params=names, timeout=60).text
    return _buckets(text, HTTP_SECONDS, 'route="/v1/job/status"'), _buckets(text, LOOP_LAG_SECONDS, "")


def server_figures(
    before: tuple[Counter[float], Counter[float]], after: tuple[Counter[float], Counter[float]]
) -> dict[str, float]:
    """Between two :func:`server_histograms`: the share of status calls within 100 ms and of
    the loop's lag samples within 10 ms, and the buckets holding their 99th percentiles."""
    status, lag = (later - earlier for later, earlier in zip(after, before, strict=True))
    return _share_and_p99(status, 0.1, "status_server") | _share_and_p99(lag, 0.01, "server_loop_lag")


def shaped(args: argparse.Namespace) -> argparse.Namespace:
    """Fill the options not given from ``--shape`` and :data:`DEFAULTS`; one executor process
    serves every cluster unless ``--executors`` is given."""
    for name, value in (DEFAULTS | SHAPES[args.shape]).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.executors is None:
        args.executors = 1
    args.clusters_per_executor = -(-args.clusters // args.executors)
    args.nodes_per_executor = args.nodes // args.clusters
    return args


async def run(args: argparse.Namespace) -> dict[str, Any]:
    streams = args.watchers + args.pollers + 10
    env = {"ARMADA_SERVER_MAX_STREAMS_PER_CALLER": str(max(100, streams)), **server_env(args)}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        url = stack.enter_context(database(args.database_url, workdir))
        base, server = start_server(stack, args, workdir, url, env=env)
        executors = start_executors(stack, args, workdir, base)
        usage = usage_of(server, executors, base, url)
        clients = ClientProcesses(
            base, args.client_processes, args.watchers, args.pollers, args.queues, args.poll_interval
        )
        stack.callback(clients.kill)
        async with unlimited_client(base) as client:
            await client.create_queues([Queue(name=f"queue-{q}") for q in range(args.queues)])
            await wait_for_executors(url, args.executors * args.clusters_per_executor)
            commits = CommitClock(url)
            await commits.start()
            clients.start()
            await clients.opened(timeout=120 + args.watchers / 10)  # before the first submit
            lag = LoopLag()
            lag.start()
            submit_latencies: list[float] = []
            before, own_before = usage.sample(), cpu_seconds()
            histograms = server_histograms(base)
            started, started_wall = time.perf_counter(), time.time()
            job_ids = await submit_all(client, args, args.submitters, submit_latencies, clients.submitted)
            submit_seconds = time.perf_counter() - started
            await wait_succeeded_by_status(client, job_ids, args.timeout)
            wall, seen_wall = time.perf_counter() - started, time.time()
            clients.stop_polling()
            await wait_finished(url, args.jobs, args.timeout, [server, *executors])
            after, own_after = usage.sample(), cpu_seconds()
            await lag.stop()
            events = await read_log(url)
            logged = Counter(e.queue for e in events if e.job_set_id == "bench")
            measured = await clients.settle(logged, timeout=30)
            await commits.stop()
            received: Counter[int] = Counter()
            for m in measured:
                received.update(m.received)
            delivered = sum(received.values())
            missing = sum(max(0, logged[q] - received[i]) for i, q in enumerate(clients.sets))
            receipts = [r for m in measured for r in m.receipts]
            status_latencies = [s for m in measured for s in m.status_latencies]
            return {
                "benchmark": "fleet",
                "shape": args.shape,
                "database": normalise_url(url).get_backend_name(),
                "clusters": args.clusters,
                "nodes": args.nodes,
                "queues": args.queues,
                "batch": args.batch,
                "jobs": args.jobs,
                "watchers": args.watchers,
                "pollers": args.pollers,
                "client_wall_s": round(wall, 2),
                "client_jobs_per_second": round(args.jobs / wall, 1),
                "submit_seconds": round(submit_seconds, 2),
                **client_gap(events, started_wall, seen_wall),
                **last_end(events, commits, seen_wall),
                **quantiles(submit_latencies, "submit_latency_s"),
                **throughput(events),
                **stages(events),
                "watch_events_delivered": delivered,
                "watch_events_missing": missing,
                "watch_streams_refused": sum(m.refused for m in measured),
                **quantiles([d for m in measured for d in m.delays], "watch_delay_s"),
                **quantiles(delays_after_commit(receipts, commits), "watch_delay_after_commit_s"),
                "status_calls": len(status_latencies),
                **quantiles(status_latencies, "status_latency_ms", scale=1000, digits=1),
                **server_figures(histograms, server_histograms(base)),
                **Usage.figures(before, after, args.jobs),
                "server_cpu_ms_per_delivered_event": round(
                    1000 * (after.server_cpu - before.server_cpu) / delivered, 3
                )
                if delivered
                else 0.0,
                "client_cpu_s": round(own_after - own_before, 1),
                **client_figures(measured, lag.samples),
                "server_rss_peak_mb": round(tree_rss_mb(server.process.pid, "VmHWM"), 1),
                **cycles(workdir / "serve.log"),
            }


def main() -> None:
    parser = database_arguments(__doc__, "sqlite")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tidy")
    workload_arguments(parser, jobs=0, batch=0)
    cluster_arguments(parser, timeout=1800)
    parser.set_defaults(jobs=None, queues=None, batch=None, executors=None)
    parser.add_argument("--clusters", type=int)
    parser.add_argument("--nodes", type=int, help="fake nodes over all clusters")
    parser.add_argument("--command", help="the jobs' command line (the fake backend sleeps)")
    parser.add_argument("--watchers", type=int)
    parser.add_argument("--pollers", type=int)
    parser.add_argument("--poll-interval", type=float, default=1.0)
    parser.add_argument(
        "--client-processes", type=int, default=2, help="processes the watchers and pollers are dealt to"
    )
    parser.add_argument("--submitters", type=int, default=4, help="submit calls in flight")
    parser.add_argument(
        "--server-env", action="append", default=[], metavar="ARMADA_X=VALUE", help="a server setting"
    )
    parser.add_argument(
        "--executor-env", action="append", default=[], metavar="ARMADA_X=VALUE", help="an executor setting"
    )
    parser.add_argument("--backend", default="fake", help=argparse.SUPPRESS)
    args = shaped(parser.parse_args())
    os.environ.setdefault("ARMADA_LOGGING_FORMAT", "json")
    report(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
