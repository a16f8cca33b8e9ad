"""Submit jobs through the real HTTP API and measure accepted (committed) jobs per second.

    armada serve --database-url postgresql+psycopg://postgres@127.0.0.1/armada &
    python bench/submit.py --url http://127.0.0.1:8080 --jobs 50000 --batch 500 --queues 10

Requests of ``--batch`` jobs go to ``--queues`` queues round-robin, ``--concurrency`` at a
time. A job counts once the server has answered 200, i.e. after its events committed. The
last line is JSON with ``jobs_per_second`` and ``p99_batch_ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.client import ArmadaApiError, AsyncArmadaClient, ClientConfig
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from bench.common import report, rss_mb

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


async def run(url: str, jobs: int, batch: int, queues: int, concurrency: int) -> dict[str, object]:
    run_id = uuid.uuid4().hex[:8]
    names = [f"bench-{run_id}-{i}" for i in range(queues)]
    items = [JobSubmitRequestItem(namespace="default", pod_spec=POD_SPEC) for _ in range(batch)]
    batches = [(names[i % queues], min(batch, jobs - i * batch)) for i in range(-(-jobs // batch))]
    latencies: list[float] = []
    async with AsyncArmadaClient(ClientConfig(armada_url=url, timeout=120)) as client:
        for name in names:
            try:
                await client.create_queue(Queue(name=name))
            except ArmadaApiError as exc:
                if exc.status != 409:
                    raise
        pending = iter(batches)

        async def worker() -> None:
            for queue, size in pending:
                started = time.perf_counter()
                await client.submit_jobs(queue, f"set-{run_id}", items[:size])
                latencies.append(time.perf_counter() - started)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    latencies.sort()
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--queues", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    report(asyncio.run(run(args.url, args.jobs, args.batch, args.queues, args.concurrency)))


if __name__ == "__main__":
    main()
