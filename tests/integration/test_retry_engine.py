"""The retry engine in the server's services, on SQLite and PostgreSQL: budgets across
failures, returns and expiries, and the kill switch."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION
from armada.model.leases import RunEvent, RunEventBatch
from armada.model.queues import Queue
from armada.model.retry import (
    AffinityMutation,
    MemoryMutation,
    Mutation,
    ResourcesMutation,
    RetryPolicy,
    RetryRule,
)
from armada.model.retry_engine import RetryEngineSettings
from tests.factories import make_job, submission
from tests.integration.test_scheduler_service import Harness, report, submit

POLICY = RetryPolicy(
    name="p",
    retry_limit=2,
    rules=[
        RetryRule(action="Retry", on_category="transient"),
        RetryRule(action="Retry", on_category="internal", on_subcategory="lease-expired"),
    ],
)


class EngineHarness(Harness):
    def __init__(self, database: Database, global_max_retries: int, *, retry_gangs: bool = True) -> None:
        settings = RetryEngineSettings(
            enabled=True, global_max_retries=global_max_retries, retry_gangs=retry_gangs
        )
        super().__init__(database, settings)

    async def run_once(self, job_id: str) -> str:
        """Schedule and lease the job; its run id."""
        await self.lease()
        await self.scheduler.cycle()
        [lease] = (await self.lease()).leases
        assert lease.job_id == job_id
        return lease.run_id

    async def fail(self, job_id: str, run_id: str, category: str) -> None:
        event = RunEvent(run_id=run_id, job_id=job_id, kind="failed", exit_code=42, failure_category=category)
        await self.intake.report(RunEventBatch(executor_id="c1", events=[event]))

    async def give_back(self, job_id: str, run_id: str) -> None:
        event = RunEvent(run_id=run_id, job_id=job_id, kind="leaseReturned", reason="node drained")
        await self.intake.report(RunEventBatch(executor_id="c1", events=[event]))


async def _engine(
    database: Database, global_max_retries: int, *, retry_gangs: bool = True
) -> AsyncIterator[EngineHarness]:
    h = EngineHarness(database, global_max_retries, retry_gangs=retry_gangs)
    await h.follower.load()
    h.follower.start()
    await database.store.append(
        [
            ev.RetryPolicyCreated(spec=POLICY),
            ev.QueueCreated(queue="q", spec=Queue(name="q", retry_policies=["p"])),
        ]
    )
    yield h
    await h.follower.stop()
    await h.scheduler.leader.release()


@pytest.fixture
async def engine(database: Database) -> AsyncIterator[EngineHarness]:
    async for h in _engine(database, 5):
        yield h


@pytest.fixture
async def kill_switch(database: Database) -> AsyncIterator[EngineHarness]:
    async for h in _engine(database, 0):
        yield h


async def test_returns_are_free_expiries_and_failures_spend_the_budget(engine: EngineHarness) -> None:
    h = engine
    [job_id] = await submit(h, 1)
    await h.give_back(job_id, await h.run_once(job_id))  # free (and within maxRetries 1)
    await h.fail(job_id, await h.run_once(job_id), "transient")  # retry 1 of 2
    assert (await h.job_states())[job_id] == "QUEUED"
    run_id = await h.run_once(job_id)
    await h.lease(runs=[report(run_id, job_id)])
    h.clock.now += 61  # the executor goes silent: an expiry spends retry 2 of 2
    await h.scheduler.cycle()
    assert (await h.job_states())[job_id] == "QUEUED"
    requeued = (await h.database.store.read(0, job_id=job_id))[-1].event
    assert isinstance(requeued, ev.JobQueued)
    assert (requeued.retry_policy, requeued.failure_category, requeued.failure_retries) == (
        "p",
        "internal",
        2,
    )
    await h.fail(job_id, await h.run_once(job_id), "transient")  # budget spent
    assert (await h.job_states())[job_id] == "FAILED"
    failed = (await h.database.store.read(0, job_id=job_id))[-1].event
    assert isinstance(failed, ev.JobFailed)
    assert failed.failure_category == "transient" and "retryLimit 2 reached" in failed.reason
    types = await h.event_types(job_id)
    assert types.count("leased") == 4 and types.count("leaseExpired") == 1


async def test_kill_switch_grants_nothing_but_still_categorises(kill_switch: EngineHarness) -> None:
    h = kill_switch
    [job_id] = await submit(h, 1)
    await h.fail(job_id, await h.run_once(job_id), "transient")
    assert (await h.job_states())[job_id] == "FAILED"
    failed = (await h.database.store.read(0, job_id=job_id))[-1].event
    assert isinstance(failed, ev.JobFailed) and "globalMaxRetries 0" in failed.reason


MUTATING = RetryPolicy(
    name="m",
    retry_limit=5,
    rules=[
        RetryRule(
            action="Retry",
            on_category="oom",
            mutate=Mutation(resources=ResourcesMutation(memory=MemoryMutation(factor=2.0))),
        ),
        RetryRule(
            action="Retry",
            on_category="node",
            mutate=Mutation(affinity=AffinityMutation(avoid_same_node=True)),
        ),
    ],
)


@pytest.fixture
async def mutating(database: Database) -> AsyncIterator[EngineHarness]:
    async for h in _engine(database, 5):
        await database.store.append(
            [
                ev.RetryPolicyCreated(spec=MUTATING),
                ev.QueueUpdated(queue="q", spec=Queue(name="q", retry_policies=["m"])),
            ]
        )
        yield h


def _memory(lease_pod_spec: dict[str, object]) -> str:
    containers = lease_pod_spec["containers"]
    assert isinstance(containers, list)
    return str(containers[0]["resources"]["requests"]["memory"])


async def test_memory_grows_on_each_oom_retry(mutating: EngineHarness) -> None:
    h = mutating
    [job_id] = await submit(h, 1)
    await h.lease()
    await h.scheduler.cycle()
    [first] = (await h.lease()).leases
    assert _memory(first.pod_spec) == "1Gi"
    await h.fail(job_id, first.run_id, "oom")
    await h.scheduler.cycle()
    [second] = (await h.lease()).leases
    assert _memory(second.pod_spec) == str(2 * 2**30)
    await h.fail(job_id, second.run_id, "oom")
    await h.scheduler.cycle()
    [third] = (await h.lease()).leases
    assert _memory(third.pod_spec) == str(4 * 2**30)
    assert (await h.job_states())[job_id] == "LEASED"


async def test_avoid_same_node_moves_the_retry_then_fails_when_no_node_is_left(
    mutating: EngineHarness,
) -> None:
    h = mutating
    [job_id] = await submit(h, 1)
    await h.lease()
    await h.scheduler.cycle()
    [first] = (await h.lease()).leases
    await h.fail(job_id, first.run_id, "node")
    await h.scheduler.cycle()
    [second] = (await h.lease()).leases
    assert second.node != first.node
    await h.fail(job_id, second.run_id, "node")
    await h.scheduler.cycle()
    assert (await h.lease()).leases == []
    assert (await h.job_states())[job_id] == "FAILED"


async def submit_gang(h: EngineHarness, size: int) -> set[str]:
    annotations = {GANG_ID_ANNOTATION: "g1", GANG_CARDINALITY_ANNOTATION: str(size)}
    gang = [make_job(queue="q", cpu="1", memory="1Gi", annotations=annotations) for _ in range(size)]
    await h.database.store.append([e for job in gang for e in submission(job)])
    return {job.id for job in gang}


async def test_a_gang_is_retried_as_one_and_then_succeeds(engine: EngineHarness) -> None:
    h = engine
    ids = await submit_gang(h, 4)
    await h.lease()
    await h.scheduler.cycle()
    first = {lease.job_id: lease.run_id for lease in (await h.lease()).leases}
    assert set(first) == ids, "the gang is placed whole"
    failing = sorted(ids)[0]
    await h.fail(failing, first[failing], "transient")
    states = await h.job_states()
    assert {states[i] for i in ids} == {"QUEUED"}, "every member requeued together"
    other = (await h.database.store.read(0, job_id=sorted(ids)[1]))[-2].event
    assert isinstance(other, ev.JobLeaseReturned) and other.reason.startswith("gang-member-failed")
    # The stopped members' runs are stale: their executor is told to kill them.
    held = [report(run_id, job_id) for job_id, run_id in first.items()]
    answer = await h.lease(runs=held)
    assert set(answer.cancel_runs) >= {first[i] for i in ids if i != failing}
    await h.scheduler.cycle()
    second = {lease.job_id: lease.run_id for lease in (await h.lease()).leases}
    assert set(second) == ids and not set(second.values()) & set(first.values())
    events = [
        RunEvent(run_id=run_id, job_id=job_id, kind="succeeded", exit_code=0)
        for job_id, run_id in second.items()
    ]
    await h.intake.report(RunEventBatch(executor_id="c1", events=events))
    states = await h.job_states()
    assert {states[i] for i in ids} == {"SUCCEEDED"}
    failed_events = [s.event.type for i in ids for s in await h.database.store.read(0, job_id=i)]
    assert "failed" not in failed_events, "no member counted as failed"


@pytest.fixture
async def gangs_off(database: Database) -> AsyncIterator[EngineHarness]:
    async for h in _engine(database, 5, retry_gangs=False):
        yield h


async def test_with_retry_gangs_off_a_gang_member_failure_takes_the_legacy_path(
    gangs_off: EngineHarness,
) -> None:
    h = gangs_off
    ids = await submit_gang(h, 2)
    await h.lease()
    await h.scheduler.cycle()
    first = {lease.job_id: lease.run_id for lease in (await h.lease()).leases}
    failing, other = sorted(ids)
    await h.fail(failing, first[failing], "transient")  # a rule says Retry: not for gangs here
    states = await h.job_states()
    assert (states[failing], states[other]) == ("FAILED", "LEASED")
    failed = (await h.database.store.read(0, job_id=failing))[-1].event
    assert isinstance(failed, ev.JobFailed) and failed.retry_policy == "", "the engine did not decide"
    other_types = await h.event_types(other)
    assert "leaseReturned" not in other_types and "queued" not in other_types[2:]


async def test_a_gang_retry_mutates_every_member(mutating: EngineHarness) -> None:
    """``mutate`` on a gang member's retry applies to the whole gang: memory grows for every
    member, and every member avoids the node the failing member ran on."""
    h = mutating
    ids = await submit_gang(h, 2)
    failing = sorted(ids)[0]
    await h.lease()
    await h.scheduler.cycle()
    first = {lease.job_id: lease for lease in (await h.lease()).leases}
    assert {_memory(lease.pod_spec) for lease in first.values()} == {"1Gi"}
    await h.fail(failing, first[failing].run_id, "oom")
    await h.scheduler.cycle()
    second = {lease.job_id: lease for lease in (await h.lease()).leases}
    assert set(second) == ids
    assert {_memory(lease.pod_spec) for lease in second.values()} == {str(2 * 2**30)}
    bad_node = second[failing].node
    await h.fail(failing, second[failing].run_id, "node")
    await h.scheduler.cycle()
    third = {lease.job_id: lease for lease in (await h.lease()).leases}
    assert set(third) == ids
    assert {lease.node for lease in third.values()}.isdisjoint({bad_node})
    assert {_memory(lease.pod_spec) for lease in third.values()} == {str(2 * 2**30)}, (
        "bumps compound, not reset"
    )
