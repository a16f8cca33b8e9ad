"""Lease calls that report only the change in held runs (``runsBase``), on SQLite and PostgreSQL."""

from __future__ import annotations

from armada.model.leases import LeaseRequest, LeaseResponse, NodeReport
from armada.model.lifecycle import RunPhase
from armada.scheduler.leases import LeaseService
from tests.harness import Harness, running, submit

NODES = [NodeReport(name="n0", allocatable={"cpu": "4", "memory": "16Gi"})]


async def call(
    h: Harness,
    report_id: str,
    runs: dict[str, RunPhase],
    *,
    base: str = "",
    gone: list[str] | None = None,
    held: int | None = None,
) -> LeaseResponse:
    request = LeaseRequest(
        executor_id="c1",
        pool="default",
        nodes=NODES,
        runs=runs,
        report_id=report_id,
        runs_base=base,
        runs_gone=gone or [],
        runs_held=held,
        max_new_leases=100,
    )
    return await h.leases.lease(request)


async def test_a_run_gone_in_a_change_is_requeued_and_an_unknown_run_added_is_cancelled(
    harness: Harness,
) -> None:
    h = harness
    job_id, lease, _ = await running(h)
    assert not (await call(h, "a", {lease.run_id: "running"})).runs_wanted
    stranger = "00000000-0000-0000-0000-000000000000"
    response = await call(h, "b", {stranger: "running"}, base="a", held=2)
    assert response.cancel_runs == [stranger] and not response.runs_wanted
    assert (await h.job_states())[job_id] == "LEASED", "still held: the change did not drop it"
    await call(h, "c", {}, base="b", gone=[lease.run_id, stranger], held=0)
    assert (await h.job_states())[job_id] == "QUEUED"
    assert (await h.event_types(job_id))[-1] == "queued"


async def test_a_change_to_a_report_the_server_does_not_hold_settles_nothing(harness: Harness) -> None:
    h = harness
    job_id, lease, _ = await running(h)
    assert not (await call(h, "a", {lease.run_id: "running"})).runs_wanted
    [second] = await submit(h, 1)
    await h.scheduler.cycle()
    restarted = LeaseService(h.database.store, h.follower, h.settings, clock=h.clock)
    h.leases = restarted  # as a restarted replica, or another one behind the same address
    response = await call(h, "b", {}, base="a", held=1)
    assert response.runs_wanted and not response.leases and not response.cancel_runs
    assert (await h.job_states())[job_id] == "LEASED", "its absence from a change is no news"
    response = await call(h, "c", {lease.run_id: "running"})
    assert not response.runs_wanted and [new.job_id for new in response.leases] == [second]


async def test_a_change_whose_count_disagrees_is_answered_with_runs_wanted(harness: Harness) -> None:
    h = harness
    job_id, lease, _ = await running(h)
    await call(h, "a", {lease.run_id: "running"})
    assert (await call(h, "b", {}, base="a", held=0)).runs_wanted
    assert (await h.job_states())[job_id] == "LEASED"
