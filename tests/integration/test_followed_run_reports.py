"""Run reports decided from the runs and jobs this replica follows in memory, re-checked
against the views when a job changed meanwhile (on SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from armada.model import events as ev
from armada.model.leases import Lease, RunEvent, RunEventBatch
from armada.scheduler import run_events
from tests.harness import Harness, scheduled, submit


def views_read_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a report reads its runs from the views."""

    async def tripwire(*_: object) -> list[object]:
        raise AssertionError("the runs were read from the views")

    monkeypatch.setattr(run_events, "runs_with_their_jobs", tripwire)


def starting(leases: list[Lease]) -> list[RunEvent]:
    """The runs reported ``pending``, then ``running``."""
    return [
        RunEvent(run_id=lease.run_id, job_id=lease.job_id, kind=kind)
        for kind in ("pending", "running")
        for lease in leases
    ]


async def test_runs_starting_and_ending_are_decided_from_memory(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    job_ids = await submit(h, 2)
    leases = await scheduled(h)
    await h.follower.catch_up()
    views_read_nothing(monkeypatch)
    events = starting(leases)
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=events)) == 4
    await h.follower.catch_up()
    done = [RunEvent(run_id=lease.run_id, job_id=lease.job_id, kind="succeeded") for lease in leases]
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=done + events)) == 2
    assert set((await h.job_states()).values()) == {"SUCCEEDED"}
    assert await h.event_types(job_ids[0]) == [
        "submitted",
        "queued",
        "leased",
        "pending",
        "running",
        "succeeded",
    ]


@pytest.mark.parametrize("follower_behind", [False, True], ids=["from-memory", "rechecked-in-views"])
async def test_a_resent_batch_of_runs_still_active_appends_nothing(
    harness: Harness, follower_behind: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retried request resends a batch whose runs are still pending or running: each event
    is a repeat of the run's state, not a move forward. Decided from memory once the replica
    has followed the first batch, and from the views when the replica lags behind it."""
    h = harness
    job_ids = await submit(h, 2)
    leases = await scheduled(h)
    await h.follower.catch_up()
    if follower_behind:
        await h.follower.stop()
    batch = RunEventBatch(executor_id="c1", events=starting(leases))
    assert await h.intake.report(batch) == 4
    if not follower_behind:
        await h.follower.catch_up()
        views_read_nothing(monkeypatch)
    assert await h.intake.report(batch) == 0
    for job_id in job_ids:
        assert await h.event_types(job_id) == ["submitted", "queued", "leased", "pending", "running"]


async def test_an_ended_run_or_another_executors_report_is_read_from_the_views(harness: Harness) -> None:
    h = harness
    [job_id] = await submit(h, 1)
    [lease] = await scheduled(h)
    done = RunEvent(run_id=lease.run_id, job_id=job_id, kind="succeeded")
    assert await h.intake.report(RunEventBatch(executor_id="c2", events=[done])) == 0, "not its run"
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=[done])) == 1
    await h.follower.catch_up()
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=[done])) == 0, "ended: retried"
    assert await h.event_types(job_id) == ["submitted", "queued", "leased", "succeeded"]


async def test_a_job_that_ended_after_the_followed_position_is_decided_from_the_views(
    harness: Harness,
) -> None:
    h = harness
    [job_id] = await submit(h, 1)
    [lease] = await scheduled(h)
    await h.follower.catch_up()
    await h.follower.stop()  # this replica's follower falls behind the log
    envelope: ev.Envelope = {"queue": "q", "job_set_id": "set-1", "job_id": job_id}
    await h.database.store.append([ev.JobCancelled(**envelope, reason="no longer needed", requestor="alice")])
    assert lease.run_id in h.follower.state.runs, "in memory the run is still active"
    running = RunEvent(run_id=lease.run_id, job_id=job_id, kind="running")
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=[running])) == 0
    assert await h.event_types(job_id) == ["submitted", "queued", "leased", "cancelled"]
