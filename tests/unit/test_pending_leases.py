"""Held leases: holding then confirming is leasing, holding then releasing is not leasing."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from armada.model.resources import ResourceIndex
from armada.scheduler.pending_leases import PendingLeases
from armada.scheduling import QUEUED, RUNNING, JobDb, Leases, NodeDb, NodeSpec
from tests.unit.scheduling.helpers import job, unlimited

JOBS = [f"j{i}" for i in range(8)]
NODES = ["c/n1", "c/n2"]


def make() -> JobDb:
    nodes = NodeDb(ResourceIndex())
    for node in NODES:
        nodes.upsert(NodeSpec(id=node, allocatable={"cpu": 64000}))
    db = JobDb(unlimited(), nodes)
    db.add_many([job(j, "q" if i % 2 else "r", cpu=1 + i % 3, submitted=i) for i, j in enumerate(JOBS)])
    return db


def leases(pairs: list[tuple[str, str]]) -> Leases:
    return Leases(
        job_ids=[j for j, _ in pairs],
        node_ids=[n for _, n in pairs],
        pools=["default"] * len(pairs),
        executors=["c"] * len(pairs),
    )


def observed(db: JobDb) -> tuple[object, ...]:
    """Everything a cycle reads: each job's state and node, queue orders, allocations."""
    jobs = tuple((j, db.state(j), db.node_of(j)) if j in db else (j, None, None) for j in JOBS)
    orders = tuple(tuple(db.ids[r] for r in db.queued_rows(q)) for q in range(len(db.queue_names)))
    return jobs, orders, db.node_allocation().tolist(), db.queued_counts


# Per job: how its held lease ends: confirmed on its node, confirmed on the other node (a
# lease not made here), released (the append ended without it), or the job finished.
ENDINGS = st.sampled_from(["confirm", "elsewhere", "release", "finish"])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(JOBS), st.tuples(st.sampled_from(NODES), ENDINGS), min_size=1),
    st.randoms(use_true_random=False),
)
def test_a_held_lease_ends_as_if_only_the_log_had_been_applied(
    held: dict[str, tuple[str, str]], rnd: object
) -> None:
    pending, db = PendingLeases(), make()
    assert sorted(pending.hold(db, leases([(j, n) for j, (n, _) in held.items()]))) == sorted(held)
    assert all(db.state(j) == RUNNING for j in held) and len(pending) == len(held)

    reference = make()  # the same log applied without anything held
    endings = list(held.items())
    rnd.shuffle(endings)  # type: ignore[attr-defined]
    for job_id, (node, ending) in endings:
        other = NODES[1 - NODES.index(node)]
        if ending in ("confirm", "elsewhere"):
            target = node if ending == "confirm" else other
            if not pending.confirm(db, job_id, target, "default"):
                db.lease(job_id, target, "default")
            reference.lease(job_id, target, "default")
        elif ending == "release":
            assert pending.release(db, [job_id]) == 1
        else:
            pending.forget(job_id)
            db.remove(job_id)
            reference.remove(job_id)
    assert len(pending) == 0
    assert observed(db) == observed(reference)


def test_only_queued_jobs_are_held_and_a_held_job_is_held_once() -> None:
    pending, db = PendingLeases(), make()
    db.lease("j1", "c/n1", "default")
    db.remove("j2")
    held = pending.hold(db, leases([("j0", "c/n1"), ("j1", "c/n2"), ("j2", "c/n1"), ("j3", "c/n2")]))
    assert held == ["j0", "j3"]
    assert pending.hold(db, leases([("j0", "c/n2")])) == []  # already held
    assert db.node_of("j0") == "c/n1"
    assert pending.release(db, ["j0", "j1", "j2"]) == 1  # only what is held is released
    assert db.state("j0") == QUEUED and db.state("j1") == RUNNING
    assert np.array_equal(db.node_allocation()[db.nodes.row("c/n1")].sum(axis=0)[:1], [2000])
