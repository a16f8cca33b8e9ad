"""The ceiling of grpc.aio server streaming on this machine, for comparison with the
watcher figure: a servicer in another process yields one constant ``EventStreamMessage``
``--messages`` times; an asyncio and a sync client count what they receive.

    python bench/grpc_ceiling.py --messages 20000

The last line is JSON with ``aio_client_messages_per_second`` and
``sync_client_messages_per_second``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc
from armada_client.armada import event_pb2, event_pb2_grpc

from bench.common import report

MESSAGE = event_pb2.EventStreamMessage(
    id="123456",
    message=event_pb2.EventMessage(
        queued=event_pb2.JobQueuedEvent(job_id="01" * 13, queue="queue", job_set_id="job-set")
    ),
)


class Constant(event_pb2_grpc.EventServicer):
    def __init__(self, count: int) -> None:
        self.count = count

    async def GetJobSetEvents(self, request: Any, context: Any) -> AsyncIterator[Any]:
        for _ in range(self.count):
            yield MESSAGE


def _serve(port: int, count: int) -> None:
    async def serve() -> None:
        server = grpc.aio.server()
        event_pb2_grpc.add_EventServicer_to_server(Constant(count), server)  # type: ignore[no-untyped-call]
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(serve())


async def _aio(address: str) -> float:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = event_pb2_grpc.EventStub(channel)  # type: ignore[no-untyped-call]
        start, count = time.perf_counter(), 0
        async for _message in stub.GetJobSetEvents(event_pb2.JobSetRequest()):
            count += 1
        return count / (time.perf_counter() - start)


def _sync(address: str) -> float:
    stub = event_pb2_grpc.EventStub(grpc.insecure_channel(address))  # type: ignore[no-untyped-call]
    start, count = time.perf_counter(), 0
    for _message in stub.GetJobSetEvents(event_pb2.JobSetRequest()):
        count += 1
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20_000)
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = multiprocessing.Process(target=_serve, args=(port, args.messages), daemon=True)
    server.start()
    time.sleep(1)
    address = f"127.0.0.1:{port}"
    try:
        aio = asyncio.run(_aio(address))
        sync = _sync(address)
    finally:
        server.kill()
    report(
        {
            "benchmark": "grpc_ceiling",
            "messages": args.messages,
            "aio_client_messages_per_second": round(aio),
            "sync_client_messages_per_second": round(sync),
        }
    )


if __name__ == "__main__":
    main()
