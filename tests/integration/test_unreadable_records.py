"""Stored records that cannot be decoded stop nothing: the follower, leases, the scheduler, a
restart and the admin check carry on; the record is reported once and its job is failed.

Records are planted as the NaN-priority bug stored them (``priority: null``), as garbage,
and as a view row an older version might have left. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.leases import RunEvent, RunEventBatch
from armada.model.queues import Queue
from armada.scheduler.follower import EventLogFollower
from armada.services.invariants import check
from armada.services.quarantine import Quarantine
from tests.harness import Harness, report, started, submit
from tests.planting import (
    damage_job_spec,
    plant_future_event,
    plant_garbage_event,
    plant_infinite_queue,
    plant_nan_priority_job,
)


@pytest.fixture
async def harness(database: Database) -> AsyncIterator[Harness]:
    h = Harness(database)
    quarantine = Quarantine(database.store)
    quarantine.start()
    async with started(h):
        yield h
        await quarantine.stop()


async def _state_of(h: Harness, job_id: str, wanted: str) -> str:
    for _ in range(100):
        state = (await h.job_states()).get(job_id, "")
        if state == wanted:
            return state
        await asyncio.sleep(0.05)
    return state


async def test_an_unreadable_submission_is_failed_and_the_rest_is_scheduled(harness: Harness) -> None:
    h = harness
    store = h.database.store
    good_before = await submit(h, 2)
    bad = await plant_nan_priority_job(store, "q", "poisoned")
    await plant_garbage_event(store, "q", "poisoned", bad.id)
    good_after = await submit(h, 2)
    await h.follower.catch_up()
    assert await _state_of(h, bad.id, "FAILED") == "FAILED"
    assert store.unreadable.counts["event"] == 2
    await h.lease()
    result = await h.scheduler.cycle()
    assert result.stats.scheduled == 4
    leases = (await h.lease()).leases
    assert sorted(lease.job_id for lease in leases) == sorted(good_before + good_after)
    failed = [s.event for s in await store.read(0, job_id=bad.id) if isinstance(s.event, ev.JobFailed)]
    assert len(failed) == 1 and "cannot be read" in failed[0].reason and "seq" in failed[0].reason
    # A restart loads its state from the views and follows the log as before.
    restarted = EventLogFollower(store, h.follower.state.config)
    await restarted.load()
    assert await restarted.catch_up() == await store.head()
    assert bad.id not in restarted.state.extras
    report_ = await check(store)
    assert any("unreadable submitted event of job " + bad.id in v for v in report_.violations)
    assert any("unreadable running event" in v for v in report_.violations)


async def test_a_leased_job_whose_spec_is_damaged_fails_and_leases_go_on(harness: Harness) -> None:
    h = harness
    store = h.database.store
    damaged, healthy = await submit(h, 2)
    await h.lease()
    await h.scheduler.cycle()
    await damage_job_spec(store, damaged)
    [lease] = (await h.lease()).leases  # the damaged job's lease is held back, not a 500
    assert lease.job_id == healthy
    assert await _state_of(h, damaged, "FAILED") == "FAILED"
    assert store.unreadable.counts["job"] == 1
    held = [report(lease.run_id, lease.job_id)]
    assert (await h.lease(runs=held)).leases == []
    batch = RunEventBatch(
        executor_id="c1", events=[RunEvent(run_id=lease.run_id, job_id=healthy, kind="succeeded")]
    )
    await h.intake.report(batch)
    assert (await h.job_states())[healthy] == "SUCCEEDED"
    restarted = EventLogFollower(store, h.follower.state.config)
    await restarted.load()  # the damaged row is skipped, not fatal
    report_ = await check(store)
    assert any(f"job {damaged} has an unreadable spec" in v for v in report_.violations)


async def test_an_unreadable_queue_is_left_out_and_can_be_replaced(harness: Harness) -> None:
    h = harness
    store = h.database.store
    await plant_infinite_queue(store, "broken")
    await h.follower.catch_up()
    assert "broken" not in h.follower.state.queues
    assert "q" in h.follower.state.queues
    restarted = EventLogFollower(store, h.follower.state.config)
    await restarted.load()
    assert "broken" not in restarted.state.queues
    assert store.unreadable.counts["queue"] == 1
    await store.append([ev.QueueUpdated(queue="broken", spec=Queue(name="broken", priority_factor=2))])
    await h.follower.catch_up()
    assert h.follower.state.queues["broken"].priority_factor == 2


async def test_an_event_of_a_newer_version_is_skipped_and_its_job_scheduled(harness: Harness) -> None:
    """A rolling upgrade: a newer replica appended an event type this version does not know.
    The follower, the scheduler and leases go on, and the job is scheduled, not failed."""
    h = harness
    store = h.database.store
    [job_id] = await submit(h, 1)
    await plant_future_event(store, "q", "set", job_id)
    await h.follower.catch_up()
    assert h.follower.applied.head == await store.head()
    assert store.unreadable.counts["event"] == 1
    await h.lease()
    assert (await h.scheduler.cycle()).stats.scheduled == 1
    assert [lease.job_id for lease in (await h.lease()).leases] == [job_id]
    restarted = EventLogFollower(store, h.follower.state.config)
    await restarted.load()
    assert await restarted.catch_up() == await store.head()
    assert "failed" not in await h.event_types(job_id)
