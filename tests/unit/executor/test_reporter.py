from __future__ import annotations

import asyncio
import random

from armada.client.errors import BadRequest, ServerError
from armada.executor.backoff import Backoff
from armada.executor.reporter import EventReporter
from armada.model.leases import RunEvent, RunEventBatch


class FlakyServer:
    """Fails a number of calls, rejects events of run ``bad``, records the rest by event id."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.received: dict[str, RunEvent] = {}

    async def report_events(self, batch: RunEventBatch) -> None:
        self.calls += 1
        if any(e.run_id == "bad" for e in batch.events):
            raise BadRequest(400, "Bad Request", "400")
        if self.failures > 0:
            self.failures -= 1
            raise ServerError(503, "Service Unavailable", "503")
        for event in batch.events:
            self.received.setdefault(event.event_id, event)


def two_slot_reporter() -> EventReporter:
    """A reporter to an always-accepting server whose buffer holds two events."""
    return EventReporter(
        FlakyServer(0),
        "ex",
        on_delivered=lambda _: asyncio.sleep(0),
        backoff=lambda: Backoff(0.001, 0.002),
        max_buffered=2,
    )


async def test_retries_until_delivered_and_isolates_rejected_events() -> None:
    server = FlakyServer(failures=5)
    delivered: list[RunEvent] = []

    async def on_delivered(events: list[RunEvent]) -> None:
        delivered.extend(events)

    reporter = EventReporter(
        server,
        "ex",
        on_delivered=on_delivered,
        backoff=lambda: Backoff(0.001, 0.002, random.Random(0)),
        batch_size=4,
    )
    events = [RunEvent(run_id=f"r{i}" if i != 5 else "bad", job_id="j", kind="pending") for i in range(10)]
    for event in events:
        await reporter.put(event)
    task = asyncio.create_task(reporter.run())
    assert await reporter.flush(within=30)
    task.cancel()
    assert len(server.received) == 9
    assert "bad" not in {e.run_id for e in server.received.values()}
    assert {e.event_id for e in delivered} == {e.event_id for e in events}
    assert reporter.backlog == 0


async def test_full_buffer_makes_put_wait() -> None:
    reporter = two_slot_reporter()
    await reporter.put(RunEvent(run_id="a", job_id="j", kind="pending"))
    await reporter.put(RunEvent(run_id="b", job_id="j", kind="pending"))
    assert reporter.full
    blocked = asyncio.create_task(reporter.put(RunEvent(run_id="c", job_id="j", kind="pending")))
    await asyncio.sleep(0)
    assert not blocked.done()
    runner = asyncio.create_task(reporter.run())
    await blocked
    assert await reporter.flush(within=30)
    runner.cancel()


async def test_offer_queues_only_while_there_is_room() -> None:
    reporter = two_slot_reporter()
    assert reporter.offer(RunEvent(run_id="a", job_id="j", kind="pending"))
    assert reporter.offer(RunEvent(run_id="b", job_id="j", kind="pending"))
    assert not reporter.offer(RunEvent(run_id="c", job_id="j", kind="pending")), "full: nothing queued"
    assert reporter.backlog == 2
    runner = asyncio.create_task(reporter.run())
    assert await reporter.flush(within=30), "an offered event is flushed like a put one"
    runner.cancel()


def test_backoff_grows_and_resets() -> None:
    backoff = Backoff(1.0, 8.0, random.Random(3))
    delays = [backoff.next_delay() for _ in range(10)]
    assert all(0.5 <= d <= 8.0 for d in delays)
    assert max(delays[5:]) > 2.0
    backoff.reset()
    assert backoff.next_delay() <= 1.0


class GatedServer:
    """Holds every report until ``gate`` opens, records each run's event kinds as received,
    and answers the reports in the reverse order of their arrival."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.open_calls = 0
        self.kinds: dict[str, list[str]] = {}
        self._answered: list[asyncio.Event] = []

    async def report_events(self, batch: RunEventBatch) -> None:
        self.open_calls += 1
        mine = asyncio.Event()
        self._answered.append(mine)
        await self.gate.wait()
        later = self._answered[self._answered.index(mine) + 1 :]
        for other in later:  # the later arrivals are answered first
            await other.wait()
        for event in batch.events:
            self.kinds.setdefault(event.run_id, []).append(event.kind)
        mine.set()
        self.open_calls -= 1


def lanes_reporter(server: GatedServer, in_flight: int, batch_size: int) -> EventReporter:
    return EventReporter(
        server,
        "ex",
        on_delivered=lambda _: asyncio.sleep(0),
        backoff=lambda: Backoff(0.001, 0.002),
        batch_size=batch_size,
        in_flight=in_flight,
    )


async def settle() -> None:
    """Let the reporter's lanes take their batches and send them (nothing is answered yet)."""
    for _ in range(100):
        await asyncio.sleep(0)


async def test_reports_go_in_lanes_without_waiting_for_each_other() -> None:
    server = GatedServer()
    reporter = lanes_reporter(server, in_flight=2, batch_size=3)
    for i in range(40):
        await reporter.put(RunEvent(run_id=f"r{i}", job_id="j", kind="pending"))
    runner = asyncio.create_task(reporter.run())
    await settle()
    assert server.open_calls == 2, "one report per lane under way"
    server.gate.set()
    assert await reporter.flush(within=30)
    runner.cancel()
    assert len(server.kinds) == 40


async def test_each_runs_events_arrive_in_order_whatever_order_reports_are_answered_in() -> None:
    server = GatedServer()
    reporter = lanes_reporter(server, in_flight=3, batch_size=1)
    runner = asyncio.create_task(reporter.run())
    kinds = ["pending", "running", "succeeded"]
    for i in range(20):
        for kind in kinds:  # a run's events one after the other, one per report
            await reporter.put(RunEvent(run_id=f"r{i}", job_id="j", kind=kind))
    await settle()
    server.gate.set()
    assert await reporter.flush(within=30)
    runner.cancel()
    assert server.kinds == {f"r{i}": kinds for i in range(20)}
