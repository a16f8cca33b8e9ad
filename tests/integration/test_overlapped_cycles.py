"""Overlapped scheduling cycles: cycle N+1 is decided while cycle N's decisions are written.

The scheduler's appends of decisions are held at a gate (other writers commit meanwhile),
so a test can run the next cycle while one is in flight. One node of 4 cpu makes capacity
visible: a cycle that did not see the leases in flight would place a 3-cpu job where a
3-cpu job was just leased.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.database import Database
from armada.eventstore.store import DraftT, EventStore, Lane
from armada.model import events as ev
from armada.reports.build import job_report
from armada.scheduler.history import CycleRecord
from armada.scheduling import QUEUED, RUNNING
from armada.services.job_actions import cancel_jobs
from tests.factories import make_job, submission
from tests.harness import Harness, started, submit


class AppendFailed(Exception):
    """The gate's stand-in for a database that went away during the append."""


class Gate:
    """Holds the scheduler's appends of decisions until opened; records what they carried."""

    def __init__(self, store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = asyncio.Event()
        self.fail = False
        self.waiting = 0
        #: Each append's drafted events (as decided, before the re-check).
        self.drafts: list[list[ev.Event]] = []
        original = store.append_checked

        async def append_checked(
            draft: DraftT,
            seen: int,
            rebuild: Callable[[AsyncConnection], Awaitable[DraftT]],
            *,
            lane: Lane = Lane.BULK,
        ) -> tuple[DraftT, int]:
            self.drafts.append(list(draft.events))
            self.waiting += 1
            try:
                await self.opened.wait()
            finally:
                self.waiting -= 1
            if self.fail:
                raise AppendFailed("the database went away")
            return await original(draft, seen, rebuild, lane=lane)

        monkeypatch.setattr(store, "append_checked", append_checked)

    async def holding(self) -> None:
        """Return once an append is held here (the task that makes it may not have run yet)."""
        while not self.waiting:  # noqa: ASYNC110 - the append task only needs a turn of the loop
            await asyncio.sleep(0)

    def leased(self, draft: int) -> list[str]:
        return [e.job_id for e in self.drafts[draft] if isinstance(e, ev.JobLeased)]


@pytest.fixture
async def harness(database: Database) -> AsyncIterator[Harness]:
    async with started(Harness(database)) as h:
        await h.lease(nodes=1)  # one node, 4 cpu
        yield h


@pytest.fixture
def gate(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Gate:
    return Gate(harness.database.store, monkeypatch)


async def decided(h: Harness, cycle: Callable[[], Awaitable[object]]) -> asyncio.Task[object]:
    """Start ``cycle`` in a task and return once its core has decided."""
    recorded = asyncio.Event()

    def listener(_: CycleRecord) -> None:
        recorded.set()

    h.scheduler.history.listeners.append(listener)
    task = asyncio.ensure_future(cycle())
    await asyncio.wait({task, asyncio.ensure_future(recorded.wait())}, return_when=asyncio.FIRST_COMPLETED)
    h.scheduler.history.listeners.remove(listener)
    return task


async def submit_one(h: Harness, cpu: str, priority: float = 0.0) -> str:
    job = make_job(queue="q", cpu=cpu, priority=priority)
    await h.database.store.append(submission(job))
    return job.id


async def leased_events(h: Harness, job_id: str) -> int:
    return (await h.event_types(job_id)).count("leased")


async def test_the_next_cycle_is_decided_while_the_last_is_written_and_respects_its_leases(
    harness: Harness, gate: Gate
) -> None:
    h = harness
    big = await submit_one(h, cpu="3", priority=5)
    first = await h.scheduler.start_cycle()
    await gate.holding()
    assert first.stats.scheduled == 1  # its decisions are in flight
    assert (await h.job_states())[big] == "QUEUED"
    assert h.follower.state.jobs.state(big) == RUNNING and big in h.follower.state.pending  # held on the node
    report = await job_report(h.database.store, h.follower.state, h.scheduler.history, big)
    assert report.reason == "leased by the last cycle; the lease is being written"

    # Ahead of ``big`` in the queue: had the cycle not seen big's lease, it would take its place.
    other_big = await submit_one(h, cpu="3")
    small = await submit_one(h, cpu="1", priority=9)
    second = await decided(h, h.scheduler.start_cycle)
    assert gate.waiting == 1 and not second.done()  # decided while the first append is held
    gate.opened.set()
    await second
    await h.scheduler.decisions_written()

    assert gate.leased(0) == [big]
    assert gate.leased(1) == [small]  # not the big job again, nor a second 3 cpu on the node
    states = await h.job_states()
    assert (states[big], states[small], states[other_big]) == ("LEASED", "LEASED", "QUEUED")
    assert [await leased_events(h, j) for j in (big, small, other_big)] == [1, 1, 0]
    leases = (await h.lease(nodes=1)).leases
    assert sorted(lease.job_id for lease in leases) == sorted([big, small])
    assert len(h.follower.state.pending) == 0  # confirmed by the log
    assert h.follower.state.jobs.state(other_big) == QUEUED


async def test_a_failed_append_releases_its_leases_and_discards_the_cycle_built_on_them(
    harness: Harness, gate: Gate
) -> None:
    h = harness
    (big,) = await submit(h, 1, cpu="3")
    await h.scheduler.start_cycle()
    (small,) = await submit(h, 1, cpu="1")
    second = await decided(h, h.scheduler.start_cycle)
    gate.fail = True
    gate.opened.set()
    with pytest.raises(AppendFailed):
        await second  # the first append failed: the second cycle's decisions are dropped
    assert len(gate.drafts) == 1
    assert len(h.follower.state.pending) == 0
    assert h.follower.state.jobs.state(big) == QUEUED and h.follower.state.jobs.state(small) == QUEUED

    gate.fail = False
    result = await h.scheduler.cycle()  # scheduled again
    assert result.stats.scheduled == 2
    states = await h.job_states()
    assert (states[big], states[small]) == ("LEASED", "LEASED")
    assert [await leased_events(h, j) for j in (big, small)] == [1, 1]


async def test_a_job_cancelled_while_its_lease_is_in_flight_is_never_leased(
    harness: Harness, gate: Gate
) -> None:
    h = harness
    (cancelled,) = await submit(h, 1, cpu="3")
    await h.scheduler.start_cycle()
    assert cancelled in h.follower.state.pending
    await cancel_jobs(h.database.store, "q", "set-1", [cancelled], reason="no", user="u")
    await h.follower.catch_up()
    state = h.follower.state
    assert cancelled not in state.jobs and cancelled not in state.pending  # its capacity is free

    (big,) = await submit(h, 1, cpu="3")
    second = await decided(h, h.scheduler.start_cycle)
    gate.opened.set()
    await second
    await h.scheduler.decisions_written()

    assert gate.leased(1) == [big]  # the cancelled job's place is free again
    states = await h.job_states()
    assert (states[cancelled], states[big]) == ("CANCELLED", "LEASED")
    assert await leased_events(h, cancelled) == 0
    assert [lease.job_id for lease in (await h.lease(nodes=1)).leases] == [big]
