"""Log-read latency on an idle system: ``POST /v1/binoculars/log`` of a running job.

    python bench/logs.py                                   # SQLite, one server
    python bench/logs.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres \\
        --server-workers 2                                 # requests cross replicas

A real ``armada serve`` and ``armada executor --backend process`` run as processes; one job
prints a line every 100 ms; the benchmark then reads its last ``--tail`` lines ``--reads``
times, one after another, each a full trip: the server posts the request, the executor's
lease long-poll carries it, the executor reads the run's output and posts it back. The goal
is p95 ≤ 1 s (docs/performance.md). The last line is JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.client import ArmadaClient, ClientConfig
from armada.model.queues import Queue
from armada.model.wire.logs import LogOptions, LogRequest
from bench.common import report
from bench.e2e import database, start_system
from tests.e2e.cluster import job, wait_for

CHATTY = "i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.1; done"


def measure(client: ArmadaClient, job_id: str, reads: int, tail: int) -> tuple[list[float], list[float]]:
    """Latencies of log reads and, for scale, of plain job-status queries between them."""
    request = LogRequest(job_id=job_id, log_options=LogOptions(tail_lines=tail))
    latencies, baseline = [], []
    for _ in range(reads):
        started = time.perf_counter()
        lines = client.job_logs(request)
        latencies.append(time.perf_counter() - started)
        assert len(lines) == tail, f"expected {tail} lines, got {len(lines)}"
        time.sleep(0.05)  # idle between reads, as a user or Lookout's follow is
        started = time.perf_counter()
        client.job_status([job_id])
        baseline.append(time.perf_counter() - started)
    return latencies, baseline


def run(args: argparse.Namespace) -> dict[str, Any]:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="armada-bench-logs-")))
        url = stack.enter_context(database(args.database_url, workdir))
        system = argparse.Namespace(
            server_workers=args.server_workers,
            executors=1,
            backend="process",
            process_cpu=4,
            nodes_per_executor=0,
            server_env=[],
        )
        base, _ = start_system(stack, system, workdir, url)
        client = stack.enter_context(ArmadaClient(ClientConfig(armada_url=base)))
        client.create_queue(Queue(name="bench"))
        [job_id] = client.submit_jobs("bench", "logs", [job(CHATTY, cpu="100m")])
        stack.callback(client.cancel_jobs, "bench", "logs", [job_id])
        wait_for(lambda: client.job_status([job_id])[job_id] == "RUNNING", what="the job to run")
        wait_for(lambda: len(client.job_logs(LogRequest(job_id=job_id))) >= args.tail, what="lines")
        latencies, baseline = measure(client, job_id, args.reads, args.tail)
        latencies.sort()
    return {
        "benchmark": "logs_idle_latency",
        "database": "postgresql" if args.database_url.startswith("postgres") else "sqlite",
        "server_workers": args.server_workers,
        "reads": len(latencies),
        "tail_lines": args.tail,
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1),
        "max_ms": round(latencies[-1] * 1000, 1),
        "status_query_p50_ms": round(statistics.median(baseline) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="sqlite", help="a PostgreSQL server URL, or sqlite")
    parser.add_argument("--server-workers", type=int, default=1, help="armada serve --workers (PostgreSQL)")
    parser.add_argument("--reads", type=int, default=100, help="log reads to time")
    parser.add_argument("--tail", type=int, default=20, help="lines per read (tailLines)")
    report(run(parser.parse_args()))


if __name__ == "__main__":
    main()
