"""Delivers run events to the server in batches, retrying until they get through.

Events are never dropped because the server is away: a failed batch is retried, with the
same event ids, after an exponential back-off with jitter. Memory stays bounded because
``put`` waits while the buffer is full, which slows the backends down instead. Only a
batch the server rejects as invalid (4xx) is split until the offending event is found,
and that one event is logged and skipped so that it cannot block the rest for ever.

Up to ``in_flight`` reports are under way at once, one per *lane*: a run's events all go
through the lane its id hashes to, and a lane sends its next batch only once the last is
delivered, so each run's events still reach the server in order. A report mostly waits
(for the network, the server's append lock, the commit); a second lane overlaps those
waits, and the server's group commit may take both reports in one transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog

from armada.client.errors import ArmadaClientError
from armada.executor.backoff import Backoff
from armada.model.leases import RunEvent, RunEventBatch

log = structlog.get_logger(__name__)


class EventSender(Protocol):
    """What the reporter needs of the API client."""

    async def report_events(self, batch: RunEventBatch) -> None: ...


class EventReporter:
    """A bounded queue of run events and the task that drains it to the server."""

    def __init__(
        self,
        sender: EventSender,
        executor_id: str,
        *,
        on_delivered: Callable[[list[RunEvent]], Awaitable[None]],
        backoff: Callable[[], Backoff],
        batch_size: int = 500,
        max_buffered: int = 100_000,
        in_flight: int = 1,
    ) -> None:
        self._sender = sender
        self._executor_id = executor_id
        self._on_delivered = on_delivered
        self._backoff = backoff
        self._batch_size = batch_size
        #: One queue per lane; together they hold ``max_buffered`` events at most.
        self._queues: list[asyncio.Queue[RunEvent]] = [
            asyncio.Queue(maxsize=max(1, max_buffered // in_flight)) for _ in range(max(1, in_flight))
        ]
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def _queue_of(self, event: RunEvent) -> asyncio.Queue[RunEvent]:
        """The lane of ``event``'s run (the same for all its events)."""
        queues = self._queues
        return queues[0] if len(queues) == 1 else queues[hash(event.run_id) % len(queues)]

    @property
    def backlog(self) -> int:
        """Events accepted but not yet delivered."""
        return sum(queue.qsize() for queue in self._queues) + self._in_flight

    @property
    def full(self) -> bool:
        """Whether ``put`` may wait: the server has not been keeping up."""
        return any(queue.full() for queue in self._queues)

    def offer(self, event: RunEvent) -> bool:
        """Queue ``event`` if there is room now; False (nothing queued) if ``put`` would wait."""
        queue = self._queue_of(event)
        if queue.full():
            return False
        self._idle.clear()
        queue.put_nowait(event)
        return True

    async def put(self, event: RunEvent) -> None:
        """Queue ``event`` for delivery, waiting while the buffer is full."""
        self._idle.clear()
        await self._queue_of(event).put(event)

    async def run(self) -> None:
        """Deliver queued events until cancelled (or a lane fails)."""
        async with asyncio.TaskGroup() as lanes:
            for number, queue in enumerate(self._queues):
                lanes.create_task(self._lane(queue), name=f"event-lane-{number}")

    async def _lane(self, queue: asyncio.Queue[RunEvent]) -> None:
        """Deliver one lane's events, a batch at a time, in the order they were queued."""
        backoff = self._backoff()
        while True:
            batch = [await queue.get()]
            while len(batch) < self._batch_size and not queue.empty():
                batch.append(queue.get_nowait())
            self._in_flight += len(batch)
            await self._deliver(batch, backoff)
            self._in_flight -= len(batch)
            try:
                await self._on_delivered(batch)
            except Exception:  # a clean-up failure must not stop event delivery
                log.exception("after-delivery handler failed", events=len(batch))
            if not self.backlog:
                self._idle.set()

    async def flush(self, within: float) -> bool:
        """Wait until everything queued so far is delivered; False if ``within`` seconds passed first."""
        try:
            async with asyncio.timeout(within):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def _deliver(self, events: list[RunEvent], backoff: Backoff) -> None:
        while True:
            try:
                await self._sender.report_events(RunEventBatch(executor_id=self._executor_id, events=events))
            except ArmadaClientError as exc:
                if not exc.retryable:
                    await self._isolate_rejected(events, exc, backoff)
                    return
                delay = backoff.next_delay()
                log.warning(
                    "event delivery failed; retrying",
                    error=str(exc),
                    events=len(events),
                    failures=backoff.failures,
                    retry_in=round(delay, 2),
                )
                await asyncio.sleep(delay)
            else:
                backoff.reset()
                log.debug("events delivered", events=len(events))
                return

    async def _isolate_rejected(
        self, events: list[RunEvent], exc: ArmadaClientError, backoff: Backoff
    ) -> None:
        if len(events) == 1:
            event = events[0]
            log.error(
                "server rejected event; skipping it",
                error=str(exc),
                event_id=event.event_id,
                run_id=event.run_id,
                kind=event.kind,
            )
            return
        middle = len(events) // 2
        await self._deliver(events[:middle], backoff)
        await self._deliver(events[middle:], backoff)
