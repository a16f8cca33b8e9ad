"""The retry engine in the server's services, on SQLite and PostgreSQL: budgets across
failures, returns and expiries, and the kill switch."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import event

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
from armada.retries.engine import RetryContext
from armada.services import queries
from tests.factories import make_job, submission
from tests.harness import Harness, report, started, submit

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
    first = [
        ev.RetryPolicyCreated(spec=POLICY),
        ev.QueueCreated(queue="q", spec=Queue(name="q", retry_policies=["p"])),
    ]
    async with started(h, first):
        yield h


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


async def _place_gang(h: EngineHarness, ids: set[str]) -> dict[str, str]:
    """Schedule the gang and lease it whole: run id by job id."""
    await h.scheduler.cycle()
    runs = {lease.job_id: lease.run_id for lease in (await h.lease()).leases}
    assert set(runs) == ids, "the gang is placed whole"
    return runs


async def test_a_gangs_shared_budget_running_out_fails_the_whole_gang(engine: EngineHarness) -> None:
    h = engine
    annotations = {GANG_ID_ANNOTATION: "g2", GANG_CARDINALITY_ANNOTATION: "3"}
    gang = [make_job(queue="q", cpu="1", memory="1Gi", annotations=annotations) for _ in range(3)]
    await h.database.store.append([e for job in gang for e in submission(job)])
    ids = sorted(job.id for job in gang)
    await h.lease()
    # Two different members fail in turn: each retry is the gang's (retry 1, then 2, of 2).
    for failing in ids[:2]:
        runs = await _place_gang(h, set(ids))
        await h.fail(failing, runs[failing], "transient")
        assert set((await h.job_states()).values()) == {"QUEUED"}
    runs = await _place_gang(h, set(ids))
    # A third member's failure finds the gang's budget spent, though it has none of its own.
    await h.fail(ids[2], runs[ids[2]], "transient")
    states = await h.job_states()
    assert {states[i] for i in ids} == {"FAILED"}, "the whole gang fails, never a part of it"
    own = (await h.database.store.read(0, job_id=ids[2]))[-1].event
    assert isinstance(own, ev.JobFailed) and "retryLimit 2 reached" in own.reason
    for other in ids[:2]:
        failed = (await h.database.store.read(0, job_id=other))[-1].event
        assert isinstance(failed, ev.JobFailed) and failed.run_id == runs[other]
        assert failed.reason.startswith(f"gang-member-failed: gang member {ids[2]} failed")
        assert failed.failure_category == "", "not a failure of theirs"
    held = [report(run_id, job_id) for job_id, run_id in runs.items()]
    answer = await h.lease(runs=held)
    assert set(answer.cancel_runs) >= {runs[i] for i in ids[:2]}, "their executor kills the runs"
    await h.scheduler.cycle()
    assert (await h.lease()).leases == [], "nothing of the gang runs again"


async def test_job_details_show_each_jobs_retry_history(mutating: EngineHarness) -> None:
    """One read of the log serves the history of several jobs (SQLite and PostgreSQL)."""
    h = mutating
    ids = await submit(h, 2)
    await h.lease()
    await h.scheduler.cycle()
    runs = {lease.job_id: lease.run_id for lease in (await h.lease()).leases}
    for job_id in ids:
        await h.fail(job_id, runs[job_id], "oom")
    details = await queries.job_details(h.database.store, ids, expand_spec=False, expand_runs=True)
    for job_id in ids:
        history = details[job_id].retry_history
        assert history is not None and (history.retries_granted, history.retry_policy) == (1, "m")
        [attempt] = history.attempts
        assert (attempt.run_id, attempt.outcome, attempt.failure_category) == (runs[job_id], "failed", "oom")
        assert (attempt.decision, attempt.retry_rule, attempt.retries_used) == ("Retry", 0, 1)
        assert attempt.mutations == ["memory 1Gi -> 2Gi"] and "retry 1 of 5" in attempt.reason
    plain = await queries.job_details(h.database.store, ids, expand_spec=False, expand_runs=False)
    assert all(d.retry_history is None for d in plain.values()), "read only with expandJobRun"


async def test_the_engine_reads_gangs_and_budgets_in_a_fixed_number_of_queries(engine: EngineHarness) -> None:
    """No query per failed job or per gang member: the read for one gang member and the
    read for two gangs and two jobs on their own cost the same statements."""
    h = engine
    gangs = [
        [
            make_job(queue="q", annotations={GANG_ID_ANNOTATION: g, GANG_CARDINALITY_ANNOTATION: "3"})
            for _ in range(3)
        ]
        for g in ("ga", "gb")
    ]
    alone = [make_job(queue="q") for _ in range(2)]
    jobs = [job for group in [*gangs, alone] for job in group]
    await h.database.store.append([e for job in jobs for e in submission(job)])
    statements: list[str] = []
    sync_engine = h.database.store.engine.sync_engine

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    async def load(job_ids: list[str]) -> RetryContext:
        statements.clear()
        event.listen(sync_engine, "before_cursor_execute", count)
        try:
            async with h.database.store.engine.connect() as conn:
                return await RetryContext.load(conn, h.intake.retry, job_ids)
        finally:
            event.remove(sync_engine, "before_cursor_execute", count)

    await load([job.id for job in jobs])  # a first connection's set-up statements are not the engine's
    one = await load([gangs[0][0].id])
    assert [m.job_id for m in one.jobs[gangs[0][0].id].gang] == [job.id for job in gangs[0]]
    single = len(statements)
    every = await load([job.id for job in jobs])
    assert len(every.jobs) == len(jobs)
    assert {m.job_id for m in every.jobs[gangs[1][2].id].gang} == {job.id for job in gangs[1]}
    assert len(statements) == single, statements
