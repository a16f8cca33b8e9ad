"""Server CPU per status call: pollers only, jobs idle (issue 44's per-request cost).

    python bench/status_cpu.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

One ``armada serve`` (no executor, so the submitted jobs stay queued), ``--queues`` queues
of ``--ids`` jobs each, then ``--pollers`` concurrent callers each sending
``POST /v1/job/status`` with its queue's ids back to back until ``--calls`` calls have been
answered. The figure is the server process's CPU time over those calls (``/proc``), less
what it spends idle (measured for 10 s just before, without calls), per 1,000 calls: what
one status call costs the server end to end (uvicorn, Litestar, the access check, the
lookup, the response), independent of how busy the host is. The last line is JSON.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from armada.model.queues import Queue
from bench.backlog import quantiles
from bench.common import database_arguments, process_cpu_seconds, report
from bench.e2e import cluster_arguments, database, job_item, start_server
from bench.fleet_clients import unlimited_client

#: How long the server's CPU is measured without calls, to take out of the figure.
IDLE_SECONDS = 10.0


async def prepare(base: str, queues: int, ids: int) -> list[list[str]]:
    """``queues`` queues of ``ids`` queued jobs; their ids."""
    client = unlimited_client(base)
    found = []
    for q in range(queues):
        await client.create_queue(Queue(name=f"queue-{q}", priority_factor=1.0))
        found.append(await client.submit_jobs(f"queue-{q}", "bench", [job_item("true")] * ids))
    return found


async def poll(base: str, ids: list[list[str]], pollers: int, calls: int, pid: int) -> dict[str, float]:
    """``pollers`` callers, back to back, until ``calls`` answers: the server's CPU and latency."""
    bodies = [httpx.Request("POST", "/", json={"jobIds": queue_ids}).read() for queue_ids in ids]
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=pollers, max_keepalive_connections=pollers)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:

        async def caller(i: int, target: int) -> None:
            body = bodies[i % len(bodies)]
            headers = {"content-type": "application/json"}
            while len(latencies) < target:
                began = time.perf_counter()
                answer = await http.post("/v1/job/status", content=body, headers=headers)
                answer.raise_for_status()
                latencies.append(time.perf_counter() - began)

        await asyncio.gather(*(caller(i, calls // 5) for i in range(pollers)))  # warm up: connections
        latencies.clear()
        idle = process_cpu_seconds(pid)
        await asyncio.sleep(IDLE_SECONDS)
        idle = (process_cpu_seconds(pid) - idle) / IDLE_SECONDS  # the scheduler's cycles and such
        cpu, began = process_cpu_seconds(pid), time.perf_counter()
        await asyncio.gather(*(caller(i, calls) for i in range(pollers)))
        cpu, wall = process_cpu_seconds(pid) - cpu, time.perf_counter() - began
    return {
        "calls": len(latencies),
        "server_cpu_s_per_1000_calls": round((cpu - idle * wall) / len(latencies) * 1000, 4),
        "server_cpu_s_per_1000_calls_with_idle": round(cpu / len(latencies) * 1000, 4),
        "server_idle_cpu_per_s": round(idle, 4),
        "calls_per_second": round(len(latencies) / wall, 1),
        **quantiles(latencies, "status_ms", scale=1000, digits=2),
    }


def main() -> None:
    parser = database_arguments(__doc__, "sqlite://")
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--ids", type=int, default=5, help="jobs per queue, named by each call")
    parser.add_argument("--pollers", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20_000)
    cluster_arguments(parser, timeout=600)
    args = parser.parse_args()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = stack.enter_context(database(args.database_url, workdir))
        base, server = start_server(stack, args, workdir, url)
        ids = asyncio.run(prepare(base, args.queues, args.ids))
        result = asyncio.run(poll(base, ids, args.pollers, args.calls, server.process.pid))
    report({"queues": args.queues, "ids": args.ids, "pollers": args.pollers, **result})


if __name__ == "__main__":
    main()
