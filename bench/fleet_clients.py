"""The fleet benchmark's watchers and status pollers, in client processes of their own.

A thousand streams and a thousand status calls a second take one Python process most of a
core: sharing the submitters' event loop, the client's own queueing showed up in the
latencies it measured. Here they are spread over ``--client-processes`` processes, each with
its own loop and a probe of that loop's lag (how late a 10 ms sleep wakes), so that a reader
can tell the server's delay from the client's.

The parent talks to each child over a pipe: it sends the ids of each submit call to the
children polling that queue, then asks them to stop polling and to settle (wait until each
watcher has received what the log holds for its job set), and reads back what they measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from armada.client import AsyncArmadaClient, ClientConfig, calls
from armada.client.transport import Http11Transport
from bench.common import cpu_seconds

#: Most ids one status call names (a poller asks about its queue's first ones).
POLL_IDS = 500
#: The loop-lag probe's sleep.
PROBE_SECONDS = 0.01


def _unlimited() -> Http11Transport:
    """A transport with no bound on its open connections (one per stream or call in flight)."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=30)
    return Http11Transport(limits=limits)


def unlimited_client(base: str) -> AsyncArmadaClient:
    """The Armada client over :func:`_unlimited`."""
    return AsyncArmadaClient(ClientConfig(armada_url=base, timeout=300), transport=_unlimited())


@dataclass
class Assignment:
    """What one client process does: its watchers' and pollers' queues, by global index."""

    base: str
    watch: dict[int, str]
    poll: dict[int, str]
    interval: float


@dataclass
class Measured:
    """What one client process measured (sent back to the parent)."""

    received: dict[int, int] = field(default_factory=dict)
    delays: list[float] = field(default_factory=list)
    #: (seq, receipt time) of every event delivered.
    receipts: list[tuple[int, float]] = field(default_factory=list)
    refused: int = 0
    status_latencies: list[float] = field(default_factory=list)
    loop_lags: list[float] = field(default_factory=list)
    cpu_s: float = 0.0


class LoopLag:
    """How late this loop wakes a task from a :data:`PROBE_SECONDS` sleep, sample by sample."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._probe())

    async def _probe(self) -> None:
        while True:
            began = time.perf_counter()
            await asyncio.sleep(PROBE_SECONDS)
            self.samples.append(time.perf_counter() - began - PROBE_SECONDS)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class _Child:
    """A client process's work: its watchers and pollers on one loop."""

    def __init__(self, client: AsyncArmadaClient, http: httpx.AsyncClient, assignment: Assignment) -> None:
        self._client = client
        self._http = http
        self._assignment = assignment
        self._waiting_to_open = len(assignment.watch)
        #: Set once every stream is open (the server has answered each).
        self.open = asyncio.Event()
        if not assignment.watch:
            self.open.set()
        self.measured = Measured(received=dict.fromkeys(assignment.watch, 0))
        self.ids: dict[str, list[str]] = {}
        self._arrived = asyncio.Event()
        self._watchers: list[asyncio.Task[None]] = []
        self._pollers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._watchers = [asyncio.create_task(self._watch(i, q)) for i, q in self._assignment.watch.items()]
        self._pollers = [asyncio.create_task(self._poll(q)) for q in self._assignment.poll.values()]

    async def _watch(self, index: int, queue: str) -> None:
        measured = self.measured
        call = calls.job_set_events(queue, "bench", watch=True, from_message_id="")
        http = self._http
        try:
            async with http.stream(call.method, call.path, **call.stream_options(http.timeout)) as response:
                response.raise_for_status()
                self._opened()
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    message = call.decode_line(line)
                    now = time.time()
                    measured.delays.append(now - message.event.created.timestamp())
                    measured.receipts.append((int(message.message_id), now))
                    measured.received[index] += 1
                    self._arrived.set()
        except Exception:  # a refused or broken stream is counted, not fatal
            measured.refused += 1
            self._opened()

    def _opened(self) -> None:
        """One more stream has its answer's headers (or was refused)."""
        self._waiting_to_open -= 1
        if not self._waiting_to_open:
            self.open.set()

    async def _poll(self, queue: str) -> None:
        """One status call with the ids submitted to ``queue``, then one an interval after each
        answer (as the first rounds measured), timed."""
        interval = self._assignment.interval
        await asyncio.sleep(interval * (hash(queue) % 1000) / 1000)  # spread over the interval
        while True:
            ids = self.ids.get(queue, [])[:POLL_IDS]
            if ids:
                began = time.perf_counter()
                await self._client.job_status(ids)
                self.measured.status_latencies.append(time.perf_counter() - began)
            await asyncio.sleep(interval)

    async def stop_polling(self) -> None:
        await _cancel(self._pollers)

    async def settle(self, expected: dict[str, int], timeout: float) -> None:
        """Wait up to ``timeout`` s until every watcher has received ``expected[its queue]``."""
        deadline = time.monotonic() + timeout
        while self._missing(expected) and (left := deadline - time.monotonic()) > 0:
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)
        await _cancel(self._watchers)

    def _missing(self, expected: dict[str, int]) -> int:
        received = self.measured.received
        return sum(max(0, expected.get(q, 0) - received[i]) for i, q in self._assignment.watch.items())


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _serve(conn: multiprocessing.connection.Connection, assignment: Assignment) -> None:
    lag = LoopLag()
    lag.start()
    cpu_before = cpu_seconds()
    inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def readable() -> None:
        while conn.poll():
            inbox.put_nowait(conn.recv())

    loop.add_reader(conn.fileno(), readable)
    streams = httpx.AsyncClient(base_url=assignment.base, transport=_unlimited(), timeout=300)
    async with unlimited_client(assignment.base) as client, streams:
        child = _Child(client, streams, assignment)
        child.start()
        await child.open.wait()
        conn.send(("open",))
        while True:
            message = await inbox.get()
            if message[0] == "ids":
                child.ids.setdefault(message[1], []).extend(message[2])
            elif message[0] == "stop-polling":
                await child.stop_polling()
            elif message[0] == "settle":
                await child.settle(message[1], message[2])
                break
    loop.remove_reader(conn.fileno())
    await lag.stop()
    child.measured.loop_lags = lag.samples
    child.measured.cpu_s = cpu_seconds() - cpu_before
    conn.send(child.measured)


def _child_main(conn: multiprocessing.connection.Connection, assignment: Assignment) -> None:
    os.environ.setdefault("ARMADA_LOGGING_FORMAT", "json")
    asyncio.run(_serve(conn, assignment))


class ClientProcesses:
    """``count`` client processes sharing ``watchers`` streams and ``pollers`` pollers (watcher
    and poller ``i`` follow ``queue-<i % queues>``), dealt round robin."""

    def __init__(
        self, base: str, count: int, watchers: int, pollers: int, queues: int, interval: float
    ) -> None:
        self.sets = [f"queue-{i % queues}" for i in range(watchers)]
        count = max(1, count)
        assignments = [
            Assignment(
                base,
                watch={i: q for i, q in enumerate(self.sets) if i % count == p},
                poll={i: f"queue-{i % queues}" for i in range(pollers) if i % count == p},
                interval=interval,
            )
            for p in range(count)
        ]
        context = multiprocessing.get_context("spawn")
        self._pipes: list[multiprocessing.connection.Connection] = []
        #: The children's ends, closed here once they run (a dead child then reads as EOF).
        self._ends: list[multiprocessing.connection.Connection] = []
        self._processes: list[multiprocessing.process.BaseProcess] = []
        #: Which pipes poll each queue.
        self._polling: dict[str, list[multiprocessing.connection.Connection]] = {}
        for assignment in assignments:
            parent, child = context.Pipe()
            self._pipes.append(parent)
            self._ends.append(child)
            self._processes.append(
                context.Process(
                    target=_child_main, args=(child, assignment), name="fleet-clients", daemon=True
                )
            )
            for queue in set(assignment.poll.values()):
                self._polling.setdefault(queue, []).append(parent)

    def start(self) -> None:
        for process in self._processes:
            process.start()
        for end in self._ends:
            end.close()

    async def opened(self, timeout: float) -> None:
        """Wait until every process has its streams open (the server answered each)."""
        async with asyncio.timeout(timeout):
            for pipe in self._pipes:
                assert await asyncio.to_thread(pipe.recv) == ("open",)

    def submitted(self, queue: str, ids: list[str]) -> None:
        """Tell the pollers of ``queue`` about ``ids``."""
        for pipe in self._polling.get(queue, ()):
            pipe.send(("ids", queue, ids[:POLL_IDS]))

    def stop_polling(self) -> None:
        for pipe in self._pipes:
            pipe.send(("stop-polling",))

    async def settle(self, logged: Counter[str], timeout: float) -> list[Measured]:
        """Let the watchers catch up with ``logged`` (events per queue) for up to ``timeout`` s,
        end the processes and gather what they measured."""
        for pipe in self._pipes:
            pipe.send(("settle", dict(logged), timeout))
        measured = [await asyncio.to_thread(pipe.recv) for pipe in self._pipes]
        for process in self._processes:
            process.join(30)
        return measured

    def kill(self) -> None:
        """End any process still running (the benchmark failed)."""
        for process in self._processes:
            if process.is_alive():
                process.kill()
