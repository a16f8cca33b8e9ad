"""The scheduler service and the lease protocol, in-process, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from armada.eventstore.database import Database
from armada.eventstore.store import StoredEvent
from armada.eventstore.writelock import Lane
from armada.model import events as ev
from armada.model.leases import LeaseRequest, NodeReport, RunEvent, RunEventBatch
from armada.model.queues import Queue
from armada.scheduler import follower as follower_module
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.leader import LeaderElection
from armada.scheduling.decisions import CYCLE_LEASE_CAP
from armada.services import queries
from tests.factories import make_job, submission
from tests.harness import Harness, report, running, scheduled, submit


async def test_jobs_flow_from_queued_to_succeeded(harness: Harness) -> None:
    h = harness
    job_ids = await submit(h, 3)
    assert (await h.lease()).leases == []  # nodes are known only after this first report
    result = await h.scheduler.cycle()
    assert result.stats.scheduled == 3
    leases = (await h.lease()).leases
    assert sorted(lease.job_id for lease in leases) == sorted(job_ids)
    assert all(lease.pod_spec["containers"] for lease in leases)
    # Retried lease call (nothing reported yet): the same leases, no new runs.
    again = (await h.lease()).leases
    assert sorted(lease.run_id for lease in again) == sorted(lease.run_id for lease in leases)
    held = [report(lease.run_id, lease.job_id) for lease in leases]
    assert (await h.lease(runs=held)).leases == []
    events = [RunEvent(run_id=lease.run_id, job_id=lease.job_id, kind="running") for lease in leases]
    events += [RunEvent(run_id=lease.run_id, job_id=lease.job_id, kind="succeeded") for lease in leases]
    batch = RunEventBatch(executor_id="c1", events=events)
    assert await h.intake.report(batch) == 6
    assert await h.intake.report(batch) == 0  # a retried batch changes nothing
    assert set((await h.job_states()).values()) == {"SUCCEEDED"}
    assert await h.event_types(job_ids[0]) == ["submitted", "queued", "leased", "running", "succeeded"]


async def test_ingress_info_is_recorded_once_per_running_run_and_shown_in_its_details(
    harness: Harness,
) -> None:
    h = harness
    [job_id] = await submit(h, 1)
    [lease] = await scheduled(h)
    addresses = {8080: "10.0.0.1:30080", 9090: "web-9090.default.jobs.example.com"}
    info = RunEvent(run_id=lease.run_id, job_id=job_id, kind="ingressInfo", ingress_addresses=addresses)
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=[info])) == 0  # not running yet
    running = RunEvent(run_id=lease.run_id, job_id=job_id, kind="running")
    batch = RunEventBatch(executor_id="c1", events=[running, info, info])
    assert await h.intake.report(batch) == 2  # running, then the first ingressInfo only
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=[info])) == 0  # retried: in the log
    assert await h.event_types(job_id) == ["submitted", "queued", "leased", "running", "ingressInfo"]
    details = await queries.run_details(h.database.store, [lease.run_id])
    assert details[lease.run_id].ingress_addresses == addresses
    jobs = await queries.job_details(h.database.store, [job_id], expand_spec=False, expand_runs=True)
    assert jobs[job_id].job_runs[0].ingress_addresses == addresses
    assert (await h.job_states())[job_id] == "RUNNING"


async def test_nodes_are_asked_for_once_and_then_stand_until_changed(harness: Harness) -> None:
    h = harness
    without_nodes = LeaseRequest(executor_id="c1", pool="default", max_new_leases=100)
    assert (await h.leases.lease(without_nodes)).nodes_wanted, "a new executor must report its nodes"
    assert (await h.lease(nodes=2)).nodes_wanted is False
    [job_id] = await submit(h, 1)
    await h.scheduler.cycle()
    [lease] = (await h.leases.lease(without_nodes)).leases  # no nodes: the known two stand
    assert lease.job_id == job_id and lease.node in {"n0", "n1"}
    other_pool = LeaseRequest(executor_id="c1", pool="gpu", max_new_leases=100)
    assert (await h.leases.lease(other_pool)).nodes_wanted, "a pool change needs the nodes again"


async def test_an_executor_behind_on_its_leases_gets_no_more_until_it_reports(harness: Harness) -> None:
    h = harness
    h.scheduler.settings = msgspec.structs.replace(h.settings, max_unacknowledged_leases_per_executor=2)
    await h.lease()
    await submit(h, 5)
    first = await h.scheduler.cycle()
    assert first.stats.scheduled == 2, "no more leases in one cycle than the executor may hold"
    assert first.reasons.cycle == CYCLE_LEASE_CAP
    assert (await h.scheduler.cycle()).stats.scheduled == 0, "two leases unacknowledged: paused"
    leases = (await h.lease()).leases
    assert (await h.scheduler.cycle()).stats.scheduled == 0, "sent is not acknowledged"
    await h.lease(runs=[report(lease.run_id, lease.job_id) for lease in leases[:1]])
    assert (await h.scheduler.cycle()).stats.scheduled == 2, "below the limit: up to the cap again"


async def test_one_cycle_leases_at_most_max_leases_per_cycle_over_all_executors(harness: Harness) -> None:
    h = harness
    h.scheduler.settings = msgspec.structs.replace(
        h.settings, max_unacknowledged_leases_per_executor=2, max_leases_per_cycle=3
    )
    await h.lease("c1")
    await h.lease("c2")
    await submit(h, 10)
    first = await h.scheduler.cycle()
    assert first.stats.scheduled == 3, "two executors may take 4, the cycle 3"
    assert first.reasons.cycle == CYCLE_LEASE_CAP
    second = await h.scheduler.cycle()
    assert second.stats.scheduled == 2, "one executor at its limit rests: the other's cap alone"


async def test_no_more_leases_while_max_leases_in_flight_runs_have_not_started(harness: Harness) -> None:
    h = harness
    h.scheduler.settings = msgspec.structs.replace(h.settings, max_leases_in_flight=3)
    await h.lease()
    await submit(h, 5)
    assert (await h.scheduler.cycle()).stats.scheduled == 3
    leases = (await h.lease()).leases
    await h.lease(runs=[report(lease.run_id, lease.job_id) for lease in leases])
    assert (await h.scheduler.cycle()).stats.scheduled == 0, "acknowledged, not yet started"
    first = leases[0]
    started = RunEvent(run_id=first.run_id, job_id=first.job_id, kind="running")
    await h.intake.report(RunEventBatch(executor_id="c1", events=[started]))
    assert (await h.scheduler.cycle()).stats.scheduled == 1, "one started: room for one"


async def test_a_job_too_big_for_every_node_is_rejected(harness: Harness) -> None:
    h = harness
    await h.lease()
    [big] = await submit(h, 1, cpu="64")
    await h.scheduler.cycle()
    assert (await h.job_states())[big] == "FAILED"
    failed = (await h.database.store.read(0, job_id=big))[-1].event
    assert isinstance(failed, ev.JobFailed) and failed.cause == ev.FailureCause.REJECTED


async def test_silent_executor_expires_and_jobs_requeue_then_fail(harness: Harness) -> None:
    h = harness
    await h.lease()
    [job_id] = await submit(h, 1)
    await h.scheduler.cycle()
    [lease] = (await h.lease()).leases
    await h.lease(runs=[report(lease.run_id, job_id)])
    h.clock.now += 61  # executor c1 goes silent
    await h.scheduler.cycle()
    assert (await h.job_states())[job_id] == "QUEUED"
    assert (await h.event_types(job_id))[-2:] == ["leaseExpired", "queued"]
    without_nodes = LeaseRequest(executor_id="c1", pool="default", max_new_leases=100)
    assert (await h.leases.lease(without_nodes)).nodes_wanted, "its nodes were cleared: resend"
    # c1 comes back; the job runs again and its executor goes silent again: retries used up.
    await h.lease()
    await h.scheduler.cycle()
    [second] = (await h.lease()).leases
    assert second.run_id != lease.run_id
    await h.lease(runs=[report(second.run_id, job_id)])
    h.clock.now += 61
    await h.scheduler.cycle()
    assert (await h.job_states())[job_id] == "FAILED"


async def test_cancel_of_a_running_job_waits_for_the_executor(harness: Harness) -> None:
    h = harness
    job_id, lease, held = await running(h)
    envelope: ev.Envelope = {"queue": "q", "job_set_id": "set-1", "job_id": job_id}
    await h.database.store.append(
        [ev.JobCancelling(**envelope, reason="no longer needed", requestor="alice")]
    )
    response = await h.lease(runs=held)
    assert response.cancel_runs == [lease.run_id]
    assert (await h.job_states())[job_id] == "LEASED"  # still active until the executor confirms
    await h.lease(runs=[])  # the executor killed it: it no longer reports the run
    assert (await h.job_states())[job_id] == "CANCELLED"
    cancelled = (await h.database.store.read(0, job_id=job_id))[-1].event
    assert isinstance(cancelled, ev.JobCancelled) and cancelled.reason == "no longer needed"


async def test_runs_the_server_forgot_are_cancelled_as_stale(harness: Harness) -> None:
    response = await harness.lease(runs=[report("00000000-0000-0000-0000-000000000000", "nope")])
    assert response.cancel_runs == ["00000000-0000-0000-0000-000000000000"]


async def test_runs_on_a_lost_node_are_requeued(harness: Harness) -> None:
    h = harness
    await h.lease(nodes=1)
    [job_id] = await submit(h, 1)
    await h.scheduler.cycle()
    [lease] = (await h.lease(nodes=1)).leases
    await h.lease(nodes=1, runs=[report(lease.run_id, job_id)])
    await h.lease(nodes=0, runs=[report(lease.run_id, job_id)])  # node n0 disappeared
    await h.scheduler.cycle()
    assert (await h.event_types(job_id))[-2:] == ["leaseReturned", "queued"]


async def test_failed_and_returned_runs(harness: Harness) -> None:
    h = harness
    await h.lease()
    failing, returned = await submit(h, 2)
    await h.scheduler.cycle()
    runs = {lease.job_id: lease.run_id for lease in (await h.lease()).leases}
    await h.intake.report(
        RunEventBatch(
            executor_id="c1",
            events=[
                RunEvent(
                    run_id=runs[failing],
                    job_id=failing,
                    kind="failed",
                    exit_code=3,
                    reason="exit 3",
                    cause="OOM",
                ),
                RunEvent(run_id=runs[returned], job_id=returned, kind="leaseReturned", reason="image pull"),
            ],
        )
    )
    states = await h.job_states()
    assert (states[failing], states[returned]) == ("FAILED", "QUEUED")
    failed = (await h.database.store.read(0, job_id=failing))[-1].event
    assert isinstance(failed, ev.JobFailed)
    assert (failed.exit_code, failed.cause) == (3, ev.FailureCause.OOM)


async def test_a_job_cancelled_after_the_core_decided_is_not_leased(harness: Harness) -> None:
    h = harness
    store = h.database.store
    await h.lease()
    cancelled, other = await submit(h, 2)
    envelope: ev.Envelope = {"queue": "q", "job_set_id": "set-1", "job_id": cancelled}
    async with store.transaction() as tx:  # holds the write lock: the decisions queue behind it
        cycle = asyncio.create_task(h.scheduler.cycle())
        # The core has decided (on both jobs queued) once its decisions queue for the lock.
        while not store._append_lock.waiting(Lane.URGENT):  # noqa: ASYNC110 - no event marks another task queueing
            await asyncio.sleep(0.01)
        tx.append([ev.JobCancelled(**envelope, reason="changed my mind")])
    assert (await cycle).stats.scheduled == 2
    states = await h.job_states()
    assert (states[cancelled], states[other]) == ("CANCELLED", "LEASED")
    assert "leased" not in await h.event_types(cancelled)


async def test_jobs_committed_with_the_decisions_wake_the_next_cycle(harness: Harness) -> None:
    """A submission sharing the decisions' transaction (group commit) was not considered by
    the cycle: the loop must not sleep past it, although the state already holds it."""
    h = harness
    store = h.database.store
    await h.lease()
    await submit(h, 1)
    await h.scheduler.cycle()
    assert h.scheduler.considered_seq == await store.head()  # only its own decisions since

    await submit(h, 1)
    async with store.transaction() as tx:  # holds the write lock: both queue behind it
        cycle = asyncio.create_task(h.scheduler.cycle())
        while not store._append_lock.waiting(Lane.URGENT):  # noqa: ASYNC110 - no event marks another task queueing
            await asyncio.sleep(0.01)
        late = asyncio.create_task(submit(h, 1))
        while not store._append_lock.waiting(Lane.BULK):  # noqa: ASYNC110 - no event marks another task queueing
            await asyncio.sleep(0.01)
        tx.append([])
    await cycle
    await late
    head = await store.head()
    assert h.scheduler.considered_seq < head
    assert await store.wait_for_change(h.scheduler.considered_seq, timeout=0) == head  # no sleep


async def test_catch_up_stops_at_the_head_it_was_called_for_under_a_stream_of_appends(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each read is followed by a full batch of new events: a catch-up chasing the head
    would hold the follower's lock (and the cycle waiting for it) until the stream stops."""
    h = harness
    monkeypatch.setattr(follower_module, "READ_BATCH", 2)
    store = h.database.store
    await h.follower.stop()  # no background catch-up: this one reads every batch
    await h.follower.catch_up()
    heartbeat = [ev.ExecutorHeartbeat(executor_id="c1")] * 2
    await store.append(heartbeat * 2)
    target = await store.head()
    read = store.read
    streamed = 0

    async def read_then_append(after_seq: int = 0, **kwargs: Any) -> list[StoredEvent]:
        nonlocal streamed
        found = await read(after_seq, **kwargs)
        if streamed < 10:
            streamed += 1
            await store.append(heartbeat)
        return found

    monkeypatch.setattr(store, "read", read_then_append)
    assert await h.follower.catch_up() == target  # not the stream's newest events
    assert streamed < 10


async def test_a_cancel_landing_while_a_report_waits_to_write_wins_over_the_stale_read(
    harness: Harness,
) -> None:
    h = harness
    store = h.database.store
    await h.lease()
    [job_id] = await submit(h, 1)
    await h.scheduler.cycle()
    [lease] = (await h.lease()).leases
    batch = RunEventBatch(
        executor_id="c1",
        events=[RunEvent(run_id=lease.run_id, job_id=job_id, kind="failed", reason="killed")],
    )
    envelope: ev.Envelope = {"queue": "q", "job_set_id": "set-1", "job_id": job_id}
    async with store.transaction() as tx:  # holds the write lock: the report queues behind it
        reporting = asyncio.create_task(h.intake.report(batch))
        # It has read the run (not yet cancelled) once it queues for the lock.
        while not store._append_lock.waiting(Lane.BULK):  # noqa: ASYNC110 - no event marks another task queueing
            await asyncio.sleep(0.01)
        tx.append([ev.JobCancelling(**envelope, reason="no longer needed", requestor="alice")])
    assert await reporting == 1
    assert (await h.job_states())[job_id] == "CANCELLED", "the failure must be read as the kill it was"


async def test_restart_rebuilds_the_same_state_from_the_views(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    monkeypatch.setattr(follower_module, "LOAD_PAGE", 5)  # the 12 jobs are read in three pages
    await h.lease()
    await submit(h, 12)  # 8 cpus of nodes: 8 run, 4 stay queued
    await h.scheduler.cycle()
    leases = (await h.lease()).leases
    await h.lease(runs=[report(lease.run_id, lease.job_id) for lease in leases])
    await h.follower.catch_up()
    live = h.follower.state
    restarted = EventLogFollower(h.database.store, live.config)
    await restarted.load()
    rebuilt = restarted.state
    assert rebuilt.seq == live.seq
    assert sorted(rebuilt.runs) == sorted(live.runs) and len(rebuilt.runs) == 8
    assert len(rebuilt.jobs) == len(live.jobs) == 12
    assert set(rebuilt.extras) == set(live.extras)
    assert set(rebuilt.executors["c1"].nodes) == {"n0", "n1"}
    assert set(rebuilt.queues) == {"q"}


@pytest.mark.postgres
async def test_only_one_replica_leads(database: Database) -> None:
    if not database.is_postgres:
        pytest.skip("leader election needs PostgreSQL")
    first, second = LeaderElection(database.url), LeaderElection(database.url)
    try:
        assert await first.ensure()
        assert not await second.ensure()
        await first.release()
        assert await second.ensure()
        assert not await first.ensure()
    finally:
        await first.release()
        await second.release()


async def test_a_new_leader_gives_silent_executors_a_full_timeout_before_expiring_them(
    database: Database,
) -> None:
    """Heartbeats cannot be recorded while no server runs: a restart must not expire every run."""
    first = Harness(database)
    await first.follower.load()
    await database.store.append([ev.QueueCreated(queue="q", spec=Queue(name="q"))])
    await first.lease()
    [job_id] = await submit(first, 1)
    await first.scheduler.cycle()
    [lease] = (await first.lease()).leases
    await first.lease(runs=[report(lease.run_id, job_id)])

    restarted = Harness(database)  # the server was down for longer than the executor timeout
    restarted.clock.now = first.clock.now + 600
    await restarted.follower.load()
    await restarted.scheduler.cycle()
    assert (await restarted.job_states())[job_id] == "LEASED"
    restarted.clock.now += 61  # still silent a full timeout after the restart: now it expires
    await restarted.scheduler.cycle()
    assert (await restarted.event_types(job_id))[-2:] == ["leaseExpired", "queued"]


async def test_long_poll_waits_through_unrelated_events_until_a_lease(harness: Harness) -> None:
    h = harness
    await h.lease()  # register nodes
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": "4", "memory": "16Gi"}) for i in range(2)]
    request = LeaseRequest(
        executor_id="c1", pool="default", nodes=nodes, max_new_leases=10, wait_millis=20_000
    )
    call = asyncio.create_task(h.leases.lease(request))
    [job_id] = await submit(h, 1)  # wakes the waiting call, but there is no lease yet
    await asyncio.sleep(0.3)
    assert not call.done()
    await h.scheduler.cycle()
    response = await asyncio.wait_for(call, 10)
    assert [lease.job_id for lease in response.leases] == [job_id]


async def test_long_poll_ends_on_a_kill_order_or_a_cordon_but_not_on_another_executors_news(
    harness: Harness,
) -> None:
    """A waiting call works its answer out again only when its executor's runs, nodes, kill
    orders or cordons change; when they do, the news goes out at once."""
    h = harness
    job_id, lease, held = await running(h)
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": "4", "memory": "16Gi"}) for i in range(2)]
    request = LeaseRequest(
        executor_id="c1", pool="default", nodes=nodes, runs=dict(held), max_new_leases=10, wait_millis=20_000
    )
    call = asyncio.create_task(h.leases.lease(request))
    await h.lease(executor="c2")  # another executor's nodes: news in the log, none for c1
    await submit(h, 1)  # a job not placed yet: no news for c1 either
    await asyncio.sleep(0.3)
    assert not call.done()
    envelope: ev.Envelope = {"queue": "q", "job_set_id": "set-1", "job_id": job_id}
    await h.database.store.append([ev.JobCancelling(**envelope, reason="stop", requestor="alice")])
    response = await asyncio.wait_for(call, 10)
    assert response.cancel_runs == [lease.run_id]
    # A cordon of one of its nodes also ends a waiting call.
    request.runs = {}
    call = asyncio.create_task(h.leases.lease(request))
    await asyncio.sleep(0.3)
    cordon = ev.NodeCordonChanged(executor_id="c1", node="n0", cordoned=True, reason="r")
    await h.database.store.append([cordon])
    response = await asyncio.wait_for(call, 10)
    assert response.cordon_nodes == {"n0": "r"}


async def test_an_executor_that_takes_no_new_runs_gets_no_leases(harness: Harness) -> None:
    h = harness
    await h.lease()
    [job_id] = await submit(h, 1)
    await h.scheduler.cycle()
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": "4", "memory": "16Gi"}) for i in range(2)]
    busy = LeaseRequest(executor_id="c1", pool="default", nodes=nodes, max_new_leases=0)
    assert (await h.leases.lease(busy)).leases == []
    assert [lease.job_id for lease in (await h.lease()).leases] == [job_id]  # sent once it has room


async def test_preempted_jobs_requeue_only_when_they_opted_in(harness: Harness) -> None:
    """Fair-share preemption: queue q fills the cluster; another queue's jobs take half back."""
    h = harness
    await h.lease()  # 2 nodes x 4 cpu
    await h.database.store.append([ev.QueueCreated(queue="late", spec=Queue(name="late"))])
    retry = {"armadaproject.io/retryOnPreemption": "true"}
    greedy = [make_job(queue="q", cpu="1", annotations=retry if i % 2 else {}) for i in range(8)]
    for job in greedy:
        job.pod_spec["priorityClassName"] = "armada-preemptible"
    await h.database.store.append([e for job in greedy for e in submission(job)])
    await h.scheduler.cycle()
    leases = (await h.lease()).leases
    assert len(leases) == 8
    await h.lease(runs=[report(lease.run_id, lease.job_id) for lease in leases])

    late = [make_job(queue="late", cpu="1") for _ in range(8)]
    await h.database.store.append([e for job in late for e in submission(job)])
    result = await h.scheduler.cycle()
    assert result.stats.preempted >= 2
    states = await h.job_states()
    preempted = [job for job in greedy if states[job.id] != "LEASED"]
    assert {bool(job.annotations) for job in preempted} == {True, False}  # both kinds lost a place
    for job in preempted:
        types = await h.event_types(job.id)
        if job.annotations:
            assert types[-2:] == ["leaseReturned", "queued"] and states[job.id] == "QUEUED"
        else:
            assert types[-1] == "preempted" and states[job.id] == "PREEMPTED"
