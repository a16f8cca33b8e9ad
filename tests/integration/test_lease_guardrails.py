"""What leases carry from the server's guardrails: the Kubernetes priority class override and a
gang's node uniformity label and value (on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from armada.eventstore.database import Database
from armada.eventstore.views import job_specs
from armada.executor.podspec import build_pod
from armada.model.jobs import (
    GANG_CARDINALITY_ANNOTATION,
    GANG_ID_ANNOTATION,
    GANG_NODE_UNIFORMITY_ANNOTATION,
    Job,
)
from armada.model.leases import Lease, LeaseRequest, NodeReport
from tests.factories import make_job, submission
from tests.harness import Harness, started


@pytest.fixture
async def harness(database: Database) -> AsyncIterator[Harness]:
    async with started(Harness(database, priority_class_name_override="k8s-batch")) as h:
        yield h


async def lease(h: Harness) -> list[Lease]:
    """Two racks: rack r1 has one node, too small for the gang; rack r2 has two."""
    nodes = [
        NodeReport(name="a", labels={"rack": "r1"}, allocatable={"cpu": "1", "memory": "4Gi"}),
        NodeReport(name="b", labels={"rack": "r2"}, allocatable={"cpu": "1", "memory": "4Gi"}),
        NodeReport(name="c", labels={"rack": "r2"}, allocatable={"cpu": "1", "memory": "4Gi"}),
    ]
    request = LeaseRequest(executor_id="c1", pool="default", nodes=nodes, max_new_leases=10)
    return (await h.leases.lease(request)).leases


async def submit_gang(h: Harness, uniformity_label: str) -> list[Job]:
    """A gang of two one-CPU members, uniform by ``uniformity_label``."""
    gang = {
        GANG_ID_ANNOTATION: "g",
        GANG_CARDINALITY_ANNOTATION: "2",
        GANG_NODE_UNIFORMITY_ANNOTATION: uniformity_label,
    }
    members = [make_job(queue="q", cpu="1", memory="1Gi", annotations=gang) for _ in range(2)]
    await h.database.store.append([e for job in members for e in submission(job)])
    return members


async def test_gang_members_learn_their_racks_label_and_pods_get_the_override(harness: Harness) -> None:
    h = harness
    members = await submit_gang(h, "rack")
    assert await lease(h) == []  # nodes become known with this first report
    assert (await h.scheduler.cycle()).stats.scheduled == 2
    leases = await lease(h)
    assert sorted(lease.node for lease in leases) == ["b", "c"]
    for leased in leases:
        assert (leased.gang_node_uniformity_label, leased.gang_node_uniformity_value) == ("rack", "r2")
        pod = build_pod(leased)
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert env["ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME"] == "rack"
        assert env["ARMADA_GANG_NODE_UNIFORMITY_LABEL_VALUE"] == "r2"
        # Kubernetes sees the override; Armada's own class is still the job's.
        assert pod["spec"]["priorityClassName"] == "k8s-batch"
    async with h.database.engine.connect() as conn:
        stored = await job_specs(conn, [members[0].id], h.database.store.unreadable)
    assert stored[members[0].id].priority_class_name == "armada-default"


async def test_an_empty_override_leaves_pods_without_a_priority_class(harness: Harness) -> None:
    h = harness
    h.leases.priority_class_name_override = ""
    job = make_job(queue="q", cpu="1", memory="1Gi")
    await h.database.store.append(submission(job))
    await lease(h)
    await h.scheduler.cycle()
    (leased,) = await lease(h)
    assert leased.gang_node_uniformity_label == ""  # not a gang
    pod = build_pod(leased)
    assert "priorityClassName" not in pod["spec"]
    assert "ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME" not in {
        e["name"] for e in pod["spec"]["containers"][0]["env"]
    }


async def test_a_gang_uniform_by_node_name_learns_its_node(harness: Harness) -> None:
    """Nodes need not report ``kubernetes.io/hostname``: the scheduler gives every node its name label."""
    h = harness
    await submit_gang(h, "kubernetes.io/hostname")
    request = LeaseRequest(
        executor_id="c1",
        pool="default",
        nodes=[NodeReport(name="big", allocatable={"cpu": "4", "memory": "16Gi"})],
        max_new_leases=10,
    )
    await h.leases.lease(request)
    await h.scheduler.cycle()
    leases = (await h.leases.lease(request)).leases
    assert [(x.gang_node_uniformity_label, x.gang_node_uniformity_value) for x in leases] == [
        ("kubernetes.io/hostname", "big")
    ] * 2
