"""The ceiling of grpc.aio server streaming on this machine, for comparison with the
watcher figure: a servicer in another process sends one constant ``EventStreamMessage``,
already serialized (as ``armada serve`` sends events), ``--messages`` times; upstream's
asyncio and sync stubs count what they receive.

    python bench/grpc_ceiling.py --messages 20000

The last line is JSON with each client's messages per second, and the CPU time per
message of that client and of the server: with no database and no conversion, the larger
of the two bounds what one watcher can receive.
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

from bench.common import cpu_seconds, process_cpu_seconds, report

MESSAGE = event_pb2.EventStreamMessage(
    id="123456",
    message=event_pb2.EventMessage(
        queued=event_pb2.JobQueuedEvent(job_id="01" * 13, queue="queue", job_set_id="job-set")
    ),
)


ENCODED = MESSAGE.SerializeToString()


def _serve(port: int, count: int) -> None:
    async def constant(request: Any, context: Any) -> AsyncIterator[bytes]:
        for _ in range(count):
            yield ENCODED

    async def serve() -> None:
        server = grpc.aio.server()
        handler = grpc.unary_stream_rpc_method_handler(
            constant, event_pb2.JobSetRequest.FromString, response_serializer=lambda encoded: encoded
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("api.Event", {"GetJobSetEvents": handler}),)
        )
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
    result: dict[str, Any] = {"benchmark": "grpc_ceiling", "messages": args.messages}
    try:
        for name, receive in (("aio", lambda: asyncio.run(_aio(address))), ("sync", lambda: _sync(address))):
            client, served = cpu_seconds(), process_cpu_seconds(server.pid)
            result[f"{name}_client_messages_per_second"] = round(receive())
            per_message = 1e6 / args.messages
            result[f"{name}_client_cpu_us_per_message"] = round((cpu_seconds() - client) * per_message, 1)
            result[f"{name}_server_cpu_us_per_message"] = round(
                (process_cpu_seconds(server.pid) - served) * per_message, 1
            )
    finally:
        server.kill()
    report(result)


if __name__ == "__main__":
    main()
