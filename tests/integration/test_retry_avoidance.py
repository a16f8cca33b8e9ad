"""A requeued job keeps off the node its run failed on when another node could hold it
(``scheduler.avoidNodeLabelsOnRetry``), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from armada.eventstore.database import Database
from armada.eventstore.views import job_specs
from armada.model.leases import Lease, LeaseRequest, NodeReport, RunEvent, RunEventBatch
from armada.model.retry_mutation import NODE_NAME_LABEL
from tests.factories import make_job, submission
from tests.harness import HARNESS_SETTINGS, Harness, started

#: Two racks of one node each, and a third node on rack r1.
NODES = [("a", "r1"), ("b", "r2"), ("c", "r1")]


def avoiding(database: Database, labels: list[str]) -> Harness:
    """A harness whose retries avoid the nodes sharing ``labels`` with the failed run's."""
    settings = msgspec.structs.replace(HARNESS_SETTINGS, avoid_node_labels_on_retry=labels)
    return Harness(database, settings=settings)


@pytest.fixture
async def harness(database: Database) -> AsyncIterator[Harness]:
    async with started(avoiding(database, [NODE_NAME_LABEL])) as h:
        yield h


async def lease(
    h: Harness, nodes: list[tuple[str, str]] = NODES, runs: dict[str, str] | None = None
) -> list[Lease]:
    reports = [
        NodeReport(name=name, labels={"rack": rack}, allocatable={"cpu": "1", "memory": "4Gi"})
        for name, rack in nodes
    ]
    request = LeaseRequest(
        executor_id="c1", pool="default", nodes=reports, runs=runs or {}, max_new_leases=10
    )  # type: ignore[arg-type]
    return (await h.leases.lease(request)).leases


async def leased_job(h: Harness) -> tuple[str, Lease]:
    """A job submitted, placed and leased on the three-node cluster."""
    job = make_job(queue="q", cpu="1", memory="1Gi")
    await h.database.store.append(submission(job))
    await lease(h)
    await h.scheduler.cycle()
    (leased,) = await lease(h)
    return job.id, leased


async def run_and_return(h: Harness, job_id: str, nodes: list[tuple[str, str]] = NODES) -> str:
    """Place the job, start its pod, and give the lease back (the pod could not go on): its node."""
    await h.scheduler.cycle()
    (leased,) = await lease(h, nodes)
    await lease(h, nodes, runs={leased.run_id: "running"})
    returned = RunEvent(
        run_id=leased.run_id, job_id=job_id, kind="leaseReturned", run_attempted=True, node=leased.node
    )
    assert await h.intake.report(RunEventBatch(executor_id="c1", events=[returned])) == 1
    await h.follower.catch_up()
    return leased.node


async def stored_fence(h: Harness, job_id: str, label: str = NODE_NAME_LABEL) -> list[str]:
    async with h.database.engine.connect() as conn:
        job = (await job_specs(conn, [job_id], h.database.store.unreadable))[job_id]
    terms = job.pod_spec.get("affinity", {}).get("nodeAffinity", {})
    terms = terms.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    return [v for t in terms for e in t.get("matchExpressions", []) if e["key"] == label for v in e["values"]]


async def test_a_returned_job_goes_to_another_node(harness: Harness) -> None:
    h = harness
    job = make_job(queue="q", cpu="1", memory="1Gi")
    await h.database.store.append(submission(job))
    await lease(h)
    first = await run_and_return(h, job.id)
    assert await stored_fence(h, job.id) == [first]  # visible in the job's details
    await h.scheduler.cycle()
    (again,) = await lease(h)
    assert again.node != first
    # The pod the executor builds carries the fence too.
    expressions = again.pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": NODE_NAME_LABEL, "operator": "NotIn", "values": [first]} in expressions[
        "nodeSelectorTerms"
    ][0]["matchExpressions"]


async def test_with_nowhere_else_to_go_the_retry_is_not_fenced(harness: Harness) -> None:
    h = harness
    only = [("a", "r1")]
    job = make_job(queue="q", cpu="1", memory="1Gi")
    await h.database.store.append(submission(job))
    await lease(h, only)
    assert await run_and_return(h, job.id, only) == "a"
    assert await stored_fence(h, job.id) == []
    await h.scheduler.cycle()
    (again,) = await lease(h, only)
    assert again.node == "a"  # not failed as unschedulable: it runs again where it can


async def test_a_lease_returned_before_the_pod_started_is_not_fenced(harness: Harness) -> None:
    h = harness
    job_id, leased = await leased_job(h)
    returned = RunEvent(run_id=leased.run_id, job_id=job_id, kind="leaseReturned", node=leased.node)
    await h.intake.report(RunEventBatch(executor_id="c1", events=[returned]))
    assert await stored_fence(h, job_id) == []


async def test_an_expired_lease_fences_the_node(harness: Harness) -> None:
    h = harness
    job_id, leased = await leased_job(h)
    await lease(h, runs={leased.run_id: "running"})
    h.clock.now += 61  # the executor goes silent
    await h.scheduler.cycle()
    assert (await h.job_states())[job_id] == "QUEUED"
    assert await stored_fence(h, job_id) == [leased.node]


async def test_other_labels_fence_the_whole_rack(database: Database) -> None:
    async with started(avoiding(database, ["rack"])) as h:
        job = make_job(queue="q", cpu="1", memory="1Gi")
        await h.database.store.append(submission(job))
        await lease(h)
        first = await run_and_return(h, job.id)
        rack = dict(NODES)[first]
        assert await stored_fence(h, job.id, "rack") == [rack]
        assert await stored_fence(h, job.id) == []  # only the configured labels
        await h.scheduler.cycle()
        (again,) = await lease(h)
        assert dict(NODES)[again.node] != rack


async def test_runs_lost_together_are_each_fenced_off_their_own_node(harness: Harness) -> None:
    h = harness
    two = [("a", "r1"), ("b", "r2")]
    jobs = [make_job(queue="q", cpu="1", memory="1Gi") for _ in range(2)]  # one scheduling key
    await h.database.store.append([event for job in jobs for event in submission(job)])
    await lease(h, two)
    await h.scheduler.cycle()
    leased = await lease(h, two)
    assert sorted(one.node for one in leased) == ["a", "b"]
    await lease(h, two, runs={one.run_id: "running" for one in leased})
    h.clock.now += 61  # the executor goes silent: both runs are lost in one go
    await h.scheduler.cycle()
    for one in leased:
        assert await stored_fence(h, one.job_id) == [one.node]
