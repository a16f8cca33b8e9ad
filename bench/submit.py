"""Submit jobs through the real HTTP API and measure accepted (committed) jobs per second.

    armada serve --database-url postgresql+psycopg://postgres@127.0.0.1/armada &
    python bench/submit.py --url http://127.0.0.1:8080 --jobs 50000 --batch 500 --queues 10

With ``--grpc 127.0.0.1:50051`` the jobs are submitted half over REST and half over gRPC
with upstream's ``armada-client`` (asyncio), in the order REST, gRPC, gRPC, REST (quarters),
so that the database's growth during the run weighs on both alike; each transport's rate
is its jobs over its time (``jobs_per_second`` for REST, ``grpc_jobs_per_second``,
``grpc_over_rest``).

Requests of ``--batch`` jobs go to ``--queues`` queues round-robin, ``--concurrency`` at a
time. A job counts once the server has answered 200, i.e. after its events committed. The
last line is JSON with ``jobs_per_second`` and ``p99_batch_ms``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc
from armada_client.armada import submit_pb2
from armada_client.asyncio_client import ArmadaAsyncIOClient

from armada.api.grpc.podspec import pod_spec_from_json
from armada.client import ArmadaApiError, AsyncArmadaClient, ClientConfig
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from bench.common import arguments, report, rss_mb, workload_arguments
from bench.usage import tree_cpu_seconds

POD_SPEC = {
    "containers": [
        {
            "name": "main",
            "image": "alpine:latest",
            "command": ["sh", "-c", "sleep 10"],
            "resources": {
                "requests": {"cpu": "1", "memory": "128Mi"},
                "limits": {"cpu": "1", "memory": "128Mi"},
            },
        }
    ]
}


def batches_of(names: list[str], jobs: int, batch: int) -> list[tuple[str, int]]:
    """``jobs`` as requests of ``batch`` jobs (the last one smaller), to the queues round-robin."""
    return [(names[i % len(names)], min(batch, jobs - i * batch)) for i in range(-(-jobs // batch))]


async def drive(
    batches: list[tuple[str, int]], submit: Callable[[str, int], Awaitable[object]], concurrency: int
) -> tuple[float, list[float]]:
    """Send ``batches`` through ``submit(queue, size)``, ``concurrency`` at a time.

    Returns the seconds the whole took and each request's latency, sorted.
    """
    latencies: list[float] = []
    pending = iter(batches)

    async def worker() -> None:
        for queue, size in pending:
            started = time.perf_counter()
            await submit(queue, size)
            latencies.append(time.perf_counter() - started)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, sorted(latencies)


async def run_grpc(address: str, jobs: int, batch: int, queues: int, concurrency: int) -> dict[str, object]:
    """The same submission over gRPC with ``armada-client``."""
    run_id = uuid.uuid4().hex[:8]
    names = [f"bench-grpc-{run_id}-{i}" for i in range(queues)]
    item = submit_pb2.JobSubmitRequestItem(namespace="default", pod_spec=pod_spec_from_json(POD_SPEC))
    async with grpc.aio.insecure_channel(address) as channel:
        client = ArmadaAsyncIOClient(channel)
        for name in names:
            await client.create_queue(client.create_queue_request(name, 1.0))

        async def submit(queue: str, size: int) -> object:
            return await client.submit_jobs(queue, f"set-{run_id}", [item] * size)

        elapsed, latencies = await drive(batches_of(names, jobs, batch), submit, concurrency)
    return {
        "grpc_seconds": round(elapsed, 3),
        "grpc_jobs_per_second": round(jobs / elapsed),
        "grpc_median_batch_ms": round(statistics.median(latencies) * 1000, 1),
    }


async def run(url: str, jobs: int, batch: int, queues: int, concurrency: int) -> dict[str, object]:
    run_id = uuid.uuid4().hex[:8]
    names = [f"bench-{run_id}-{i}" for i in range(queues)]
    items = [JobSubmitRequestItem(namespace="default", pod_spec=POD_SPEC) for _ in range(batch)]
    async with AsyncArmadaClient(ClientConfig(armada_url=url, timeout=120)) as client:
        for name in names:
            try:
                await client.create_queue(Queue(name=name))
            except ArmadaApiError as exc:
                if exc.status != 409:
                    raise

        async def submit(queue: str, size: int) -> object:
            return await client.submit_jobs(queue, f"set-{run_id}", items[:size])

        elapsed, latencies = await drive(batches_of(names, jobs, batch), submit, concurrency)
    return {
        "benchmark": "submit",
        "jobs": jobs,
        "batch": batch,
        "queues": queues,
        "concurrency": concurrency,
        "seconds": round(elapsed, 3),
        "jobs_per_second": round(jobs / elapsed),
        "median_batch_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_batch_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 1),
        "client_rss_mb": rss_mb(),
    }


class ServerCpu:
    """The server's CPU seconds spent while each transport submitted (nothing without a pid)."""

    def __init__(self, pid: int, batch: int) -> None:
        self.pid, self.batch = pid, batch
        self.seconds: dict[str, float] = {}

    @contextmanager
    def measure(self, transport: str) -> Iterator[None]:
        before = tree_cpu_seconds(self.pid) if self.pid else 0.0
        yield
        if self.pid:
            spent = tree_cpu_seconds(self.pid) - before
            self.seconds[transport] = self.seconds.get(transport, 0.0) + spent

    def figures(self, jobs: int) -> dict[str, object]:
        """Per job and per request, for each transport measured (``jobs`` of each)."""
        result: dict[str, object] = {}
        for transport, seconds in self.seconds.items():
            prefix = "" if transport == "rest" else f"{transport}_"
            result[f"{prefix}server_cpu_us_per_job"] = round(seconds / jobs * 1e6, 1)
            result[f"{prefix}server_cpu_ms_per_request"] = round(seconds / -(-jobs // self.batch) * 1e3, 3)
        return result


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    workload_arguments(parser, jobs=50_000, batch=500)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--grpc", default="", help="gRPC address: also submit over gRPC, same run")
    parser.add_argument("--server-pid", type=int, default=0, help="report this server's CPU per job")
    args = parser.parse_args()
    server_cpu = ServerCpu(args.server_pid, args.batch)
    if not args.grpc:
        with server_cpu.measure("rest"):
            result = asyncio.run(run(args.url, args.jobs, args.batch, args.queues, args.concurrency))
        report(result | server_cpu.figures(args.jobs))
        return
    quarter = args.jobs // 4
    rest_seconds = grpc_seconds = 0.0
    result = {}
    for transport in ("rest", "grpc", "grpc", "rest"):
        with server_cpu.measure(transport):
            if transport == "rest":
                result = asyncio.run(run(args.url, quarter, args.batch, args.queues, args.concurrency))
                rest_seconds += float(str(result["seconds"]))
            else:
                part = asyncio.run(run_grpc(args.grpc, quarter, args.batch, args.queues, args.concurrency))
                grpc_seconds += float(str(part["grpc_seconds"]))
    rest_rate, grpc_rate = 4 * quarter / 2 / rest_seconds, 4 * quarter / 2 / grpc_seconds
    result |= {
        "jobs": 4 * quarter,
        "seconds": round(rest_seconds, 3),
        "jobs_per_second": round(rest_rate),
        "grpc_seconds": round(grpc_seconds, 3),
        "grpc_jobs_per_second": round(grpc_rate),
        "grpc_over_rest": round(grpc_rate / rest_rate, 2),
        "client_rss_mb": rss_mb(),
    }
    result |= server_cpu.figures(2 * quarter)
    for key in ("median_batch_ms", "p99_batch_ms"):  # those of the last quarter only: left out
        result.pop(key, None)
    report(result)


if __name__ == "__main__":
    main()
