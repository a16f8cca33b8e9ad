"""One gRPC watcher reads a large job set's events: events per second received.

    armada serve --database-url postgresql+psycopg://postgres@127.0.0.1/armada &
    python bench/grpc_watch.py --url http://127.0.0.1:8080 --grpc 127.0.0.1:50051 --events 100000

The job set is filled over REST first (a submitted and a queued event per job, so
``--events / 2`` jobs); then ``GetJobSetEvents`` (upstream's ``armada-client`` stub, not
watching) is read from the first message to the last. ``--queue Q`` reads the job set a
previous run filled in queue ``Q`` instead (to compare servers on the same data). The last
line is JSON with ``events_per_second``, the watcher's own CPU time per event and, given
``--server-pid`` (the ``armada serve`` process), the server's CPU time per event sent.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc
import grpc.experimental
from armada_client.armada import event_pb2
from armada_client.asyncio_client import ArmadaAsyncIOClient
from armada_client.client import ArmadaClient

from armada.client import AsyncArmadaClient, ClientConfig
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from bench.common import cpu_seconds, process_cpu_seconds, report, rss_mb
from bench.submit import POD_SPEC


async def fill(url: str, queue: str, job_set: str, jobs: int, batch: int = 1000) -> None:
    items = [JobSubmitRequestItem(namespace="default", pod_spec=POD_SPEC) for _ in range(batch)]
    async with AsyncArmadaClient(ClientConfig(armada_url=url, timeout=300)) as client:
        await client.create_queue(Queue(name=queue))
        for start in range(0, jobs, batch):
            await client.submit_jobs(queue, job_set, items[: min(batch, jobs - start)])


OPTIONS = [("grpc.max_receive_message_length", -1)]


async def watch(address: str, queue: str, job_set: str) -> tuple[int, float, float]:
    """Upstream's asyncio client: events, seconds, CPU seconds."""
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        client = ArmadaAsyncIOClient(channel)
        request = event_pb2.JobSetRequest(id=job_set, queue=queue, watch=False)
        count = 0
        start, cpu = time.perf_counter(), cpu_seconds()
        async for _message in client.event_stub.GetJobSetEvents(request):
            count += 1
        return count, time.perf_counter() - start, cpu_seconds() - cpu


def watch_sync(address: str, queue: str, job_set: str, single_threaded: bool) -> tuple[int, float, float]:
    """Upstream's sync client, optionally with grpc's single-threaded server streams."""
    options = list(OPTIONS)
    if single_threaded:
        options.append((grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1))
    with grpc.insecure_channel(address, options=options) as channel:
        client = ArmadaClient(channel)
        request = event_pb2.JobSetRequest(id=job_set, queue=queue, watch=False)
        count = 0
        start, cpu = time.perf_counter(), cpu_seconds()
        for _message in client.event_stub.GetJobSetEvents(request):
            count += 1
        return count, time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--grpc", default="127.0.0.1:50051")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queue", default="", help="read this queue's job set, filled by an earlier run")
    parser.add_argument(
        "--client",
        choices=["asyncio", "sync", "sync-single-threaded"],
        default="asyncio",
        help="which armada-client reads the stream (sync-single-threaded: the sync client with "
        "grpc.experimental.ChannelOptions.SingleThreadedUnaryStream)",
    )
    parser.add_argument("--server-pid", type=int, default=0, help="measure this server process's CPU too")
    args = parser.parse_args()
    queue, job_set = args.queue or f"watch-{uuid.uuid4().hex[:8]}", "big"
    if not args.queue:
        asyncio.run(fill(args.url, queue, job_set, args.events // 2))
    served = process_cpu_seconds(args.server_pid) if args.server_pid else 0.0
    if args.client == "asyncio":
        count, seconds, cpu = asyncio.run(watch(args.grpc, queue, job_set))
    else:
        count, seconds, cpu = watch_sync(args.grpc, queue, job_set, args.client == "sync-single-threaded")
    server: dict[str, float] = {}
    if args.server_pid:
        server["server_cpu_us_per_event"] = round(
            (process_cpu_seconds(args.server_pid) - served) / count * 1e6, 1
        )
    report(
        {
            "benchmark": "grpc_watch",
            "queue": queue,
            "client": args.client,
            "events": count,
            "seconds": round(seconds, 3),
            "events_per_second": round(count / seconds),
            "client_cpu_us_per_event": round(cpu / count * 1e6, 1),
            **server,
            "client_rss_mb": rss_mb(),
            "load_average": round(os.getloadavg()[0], 1),
        }
    )


if __name__ == "__main__":
    main()
