"""A small in-test Armada server speaking the executor wire contract over real HTTP.

It hands out the leases a test queues, cancels what a test asks, records events
deduplicated by event id (as the real server must), and can fail on purpose.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import uvicorn

from armada.model.leases import (
    Lease,
    LeaseRequest,
    LeaseResponse,
    LogAnswer,
    LogOrder,
    RunEvent,
    RunEventBatch,
)
from armada.scheduler.held_runs import HeldRunReports

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ContractServer:
    """State and ASGI app of the test double."""

    def __init__(self, *, tls: tuple[str, str] | None = None) -> None:
        self.port = free_port()
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.queued: list[Lease] = []
        self.active: dict[str, str] = {}
        self.cancel: set[str] = set()
        self.preempt: set[str] = set()
        self.events: dict[str, RunEvent] = {}
        self.deliveries = 0
        self.lease_requests: list[LeaseRequest] = []
        #: The executor's reports of held runs, kept as the real server keeps them; the runs
        #: the latest call said it holds.
        self.held_reports = HeldRunReports()
        self.held: set[str] = set()
        #: How many runs each lease call said the executor holds, in call order.
        self.held_counts: list[int] = []
        #: Answer the next lease call with ``nodesWanted`` (as a server that lost them).
        self.forget_nodes = False
        self.auth_headers: list[str] = []
        #: Event calls to fail with 503 before the work is done / after it is recorded.
        self.fail_events_before = 0
        self.fail_events_after = 0
        #: Send every queued lease and re-send unacknowledged ones, whatever was asked for.
        self.greedy = False
        self.sent: dict[str, Lease] = {}
        #: Nodes operators cordoned (node → reason), sent on every lease response.
        self.cordons: dict[str, str] = {}
        #: Log requests handed out with the next lease call, and the answers posted back.
        self.log_orders: list[LogOrder] = []
        self.log_answers: dict[str, LogAnswer] = {}
        self._changed = asyncio.Condition()
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    # --- test controls -------------------------------------------------------------
    def offer(self, *leases: Lease) -> None:
        """Queue leases; also counts them as active on the server."""
        for lease in leases:
            self.queued.append(lease)
            self.active[lease.run_id] = lease.job_id

    def kinds(self, run_id: str) -> list[str]:
        """Distinct event kinds received for ``run_id``, in arrival order."""
        return [e.kind for e in self.events.values() if e.run_id == run_id]

    def reported(self) -> set[str]:
        """Run ids the latest lease request said the executor holds."""
        return self.held

    def forget_held_runs(self) -> None:
        """Lose the executor's reports of held runs, as a restarted or other replica would."""
        self.held_reports = HeldRunReports()

    async def wait_for(self, predicate: Callable[[], bool], within: float = 120.0) -> None:
        """Wait (event-driven, with a generous safety timeout) until ``predicate`` holds."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(predicate)

    async def start(self) -> None:
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="off",
            ws="none",
            interface="asgi3",
            ssl_certfile=self.tls[0] if self.tls else None,
            ssl_keyfile=self.tls[1] if self.tls else None,
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:  # noqa: ASYNC110 - uvicorn offers no started event
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
            self._server = None

    # --- the contract ---------------------------------------------------------------
    async def _lease(self, request: LeaseRequest) -> LeaseResponse:
        self.lease_requests.append(request)
        reported = self.held_reports.resolve(request)
        if self.forget_nodes:
            self.forget_nodes = False
            return LeaseResponse(nodes_wanted=True, runs_wanted=reported is None)
        if reported is None:
            return LeaseResponse(runs_wanted=True)
        held = self.held = set(reported)
        self.held_counts.append(len(held))
        if self.greedy:  # like a server that ignores maxNewLeases and re-sends unacknowledged leases
            started = {e.run_id for e in self.events.values()}
            resend = [s for s in self.sent.values() if s.run_id not in held and s.run_id not in started]
            give, self.queued = [*self.queued, *resend], []
        else:
            give = self.queued[: request.max_new_leases]
            del self.queued[: len(give)]
        self.sent.update((lease.run_id, lease) for lease in give)
        return LeaseResponse(
            leases=give,
            cancel_runs=sorted(r for r in held if r in self.cancel or r not in self.active),
            preempt_runs=sorted(r for r in held if r in self.preempt),
            cordon_nodes=dict(self.cordons),
            log_requests=self._take_log_orders(),
        )

    def _take_log_orders(self) -> list[LogOrder]:
        orders, self.log_orders = self.log_orders, []
        return orders

    async def _events(self, batch: RunEventBatch) -> None:
        self.deliveries += 1
        for event in batch.events:
            self.events.setdefault(event.event_id, event)

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        self.auth_headers.append(headers.get(b"authorization", b"").decode())
        status, payload = await self._route(scope["path"], body)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"json")]})
        await send({"type": "http.response.body", "body": payload})
        async with self._changed:
            self._changed.notify_all()

    async def _route(self, path: str, body: bytes) -> tuple[int, bytes]:
        if path == "/v1/executor/lease":
            request = msgspec.json.decode(body, type=LeaseRequest)
            return 200, msgspec.json.encode(await self._lease(request))
        if path == "/v1/executor/events":
            batch = msgspec.json.decode(body, type=RunEventBatch)
            if self.fail_events_before > 0:
                self.fail_events_before -= 1
                return 503, b"{}"
            await self._events(batch)
            if self.fail_events_after > 0:
                self.fail_events_after -= 1
                return 503, b"{}"
            return 200, b"{}"
        if path == "/v1/executor/logs":
            answer = msgspec.json.decode(body, type=LogAnswer)
            self.log_answers[answer.request_id] = answer
            return 200, b"{}"
        return 404, b"{}"
