"""Job database: incremental updates, queue order, aggregates."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

from armada.model.resources import ResourceIndex
from armada.scheduling import QUEUED, RUNNING, JobDb, NodeDb, NodeSpec
from tests.unit.scheduling.helpers import job, unlimited


def make() -> JobDb:
    nodes = NodeDb(ResourceIndex())
    nodes.upsert(NodeSpec(id="n1", allocatable={"cpu": 8000}))
    return JobDb(unlimited(), nodes)


def order(db: JobDb, queue: str) -> list[str | None]:
    return [db.ids[r] for r in db.queued_rows(db.queue_index(queue))]


def test_queue_order_and_incremental_resort() -> None:
    db = make()
    db.add_many(
        [job("a", "q", submitted=2), job("b", "q", submitted=1), job("c", "q", submitted=3, priority=-1)]
    )
    assert order(db, "q") == ["c", "b", "a"]
    db.add(job("d", "q", submitted=4))  # appends without a full sort
    db.add(job("e", "q", submitted=0))  # lands in the middle
    assert order(db, "q") == ["c", "e", "b", "a", "d"]
    db.reprioritize("a", -5)
    assert order(db, "q") == ["a", "c", "e", "b", "d"]
    db.remove("c")
    assert order(db, "q") == ["a", "e", "b", "d"]


def test_lease_requeue_remove_keep_aggregates() -> None:
    db = make()
    db.add_many([job("a", "q", cpu=2), job("b", "q", cpu=2)])
    key = int(db.cols["key"][db.row("a")])
    assert db.queued_counts[0] == {key: 2}
    db.lease("a", "n1", "default")
    assert db.state("a") == RUNNING and db.node_of("a") == "n1"
    assert db.queued_counts[0] == {key: 1}
    assert order(db, "q") == ["b"]
    node = db.nodes.row("n1")
    assert node is not None
    assert db.node_allocation()[node].sum(axis=0)[0] == 2000
    assert db.queue_allocation(0, "default").sum(axis=0)[0] == 2000
    assert db.running_rows(0, "default").tolist() == [db.row("a")]
    db.requeue("a")
    assert db.state("a") == QUEUED and db.node_of("a") is None
    assert order(db, "q") == ["a", "b"]
    assert not db.node_allocation().any()
    db.lease("b", "unknown-node", "default")  # nodes may report after leases are replayed
    db.remove("b")
    db.remove("a")
    assert len(db) == 0 and db.queued_counts[0] == {}
    assert not np.any(db.node_allocation())
    with pytest.raises(KeyError):
        db.remove("a")


def test_batched_leases_and_removals_equal_one_at_a_time() -> None:
    def fill() -> JobDb:
        db = make()
        db.nodes.upsert(NodeSpec(id="n2", allocatable={"cpu": 8000}))
        gang = {"gang_id": "g", "gang_cardinality": 2}
        db.add_many([job("a", "q", cpu=2), job("b", "r", cpu=1), job("c", "q", cpu=3), job("d", "q", **gang)])
        db.add(job("e", "q", **gang))
        return db

    one, many = fill(), fill()
    placed = [("a", "n1"), ("b", "n2"), ("d", "n1"), ("e", "n2")]
    for job_id, node in placed:
        one.lease(job_id, node, "default")
    many.lease_many([j for j, _ in placed], [n for _, n in placed], ["default"] * len(placed))
    for job_id in ("a", "c", "d"):
        one.remove(job_id)
    many.remove_many(["a", "c", "d"])
    for db in (one, many):
        assert db.states_of(["b", "e", "a", "zz"]).tolist() == [RUNNING, RUNNING, 0, 0]
        assert order(db, "q") == [] and len(db) == 2
    assert np.array_equal(one.node_allocation(), many.node_allocation())
    for queue in (0, 1):
        assert np.array_equal(one.queue_allocation(queue, "default"), many.queue_allocation(queue, "default"))
    assert one.queued_counts == many.queued_counts
    assert one.gang_queued[:1].tolist() == many.gang_queued[:1].tolist() == [0]
    with pytest.raises(ValueError, match="not queued"):
        many.lease_many(["b"], ["n1"], ["default"])


def test_every_change_moves_the_version() -> None:
    db = make()
    seen = [db.version]
    for change in (
        lambda: db.add(job("a", "q")),
        lambda: db.reprioritize("a", 2),
        lambda: db.lease("a", "n1", "default"),
        lambda: db.started("a", 5.0),
        lambda: db.requeue("a"),
        lambda: db.remove("a"),
    ):
        change()
        assert db.version > seen[-1]
        seen.append(db.version)


def test_gang_bookkeeping_and_errors() -> None:
    db = make()
    gang = {"gang_id": "g", "gang_cardinality": 2}
    db.add_many([job("g0", "q", **gang), job("g1", "q", **gang)])  # type: ignore[arg-type]
    index = db.gang_of(db.row("g0"))
    assert db.gang_queued[index] == 2
    db.lease("g0", "n1", "default")
    assert db.gang_queued[index] == 1
    with pytest.raises(ValueError, match="already known"):
        db.add(job("g1", "q"))
    with pytest.raises(ValueError, match="not queued"):
        db.lease("g0", "n1", "default")
    with pytest.raises(ValueError, match="not running"):
        db.requeue("g1")
    with pytest.raises(ValueError, match="unknown priority class"):
        db.add(job("x", "q", priority_class_name="nope"))


def test_a_gang_whose_members_are_replaced_one_by_one_is_mixed_only_in_between() -> None:
    """A retry that mutates a whole gang replaces its members one at a time."""
    db = make()
    gang: dict[str, Any] = {"gang_id": "g", "gang_cardinality": 2}
    db.add_many([job("g0", "q", memory_gi=1, **gang), job("g1", "q", memory_gi=1, **gang)])
    index = db.gang_of(db.row("g0"))
    db.remove("g0")
    db.add(job("g0", "q", memory_gi=2, **gang))
    assert db.gang_mixed[index], "1Gi and 2Gi members: not schedulable as one"
    db.remove("g1")
    db.add(job("g1", "q", memory_gi=2, **gang))
    assert not db.gang_mixed[db.gang_of(db.row("g1"))]
    assert db.gang_queued[db.gang_of(db.row("g1"))] == 2


def test_scheduling_key_description() -> None:
    db = make()
    gang: dict[str, Any] = {"gang_id": "g", "gang_cardinality": 2, "gang_node_uniformity_label": "rack"}
    db.add(job("a", "q", cpu=0.5, memory_gi=4, node_selector={"zone": "a"}, pools=("p",), **gang))
    info = db.keys.infos[int(db.cols["key"][db.row("a")])]
    assert info.describe() == "cpu=500m memory=4Gi armada-default zone=a pools=p gang of 2 by rack"


def test_removed_rows_are_reclaimed() -> None:
    db = make()
    db.compact_min = 4
    gang: dict[str, Any] = {"gang_id": "g", "gang_cardinality": 2}
    db.add_many([job(f"old{i}", "q", submitted=i) for i in range(20)])
    db.add_many([job("g0", "q", submitted=30, **gang), job("g1", "q", submitted=31, **gang)])
    db.lease("old19", "n1", "default")
    for i in range(15):
        db.remove(f"old{i}")
    db.add(job("new", "q", submitted=40))  # triggers compaction
    assert len(db.ids) == len(db) == 8
    assert order(db, "q") == ["old15", "old16", "old17", "old18", "g0", "g1", "new"]
    assert db.node_of("old19") == "n1"
    node = db.nodes.row("n1")
    assert node is not None and db.jobs_on_node(node) == {db.row("old19")}
    assert db.gang_queued[db.gang_of(db.row("g1"))] == 2
    db.remove("old19")
    assert not db.node_allocation().any()


def test_a_copy_is_independent_of_the_original() -> None:
    db = make()
    db.add_many([job("a", "q"), job("b", "q", priority=2), job("g1", "q", gang_id="g", gang_cardinality=2)])
    db.add_many([job("g2", "q", gang_id="g", gang_cardinality=2), job("c", "other")])
    db.lease("a", "n1", "default")
    order(db, "q")  # sorted once: the copy must not share the sorted rows either
    before = pickle.dumps(db)
    clone = db.copy()
    # Everything a simulation does to its copy, and more: new keys, resources, nodes and queues.
    clone.add_many(
        [job("x", "new", extra={"nvidia.com/gpu": 1}), job("g3", "q", gang_id="h", gang_cardinality=1)]
    )
    clone.lease("b", "n2", "other-pool")
    clone.lease("g1", "n1", "default")
    clone.requeue("a")
    clone.reprioritize("c", 9)
    for job_id in ("g2", "c", "a"):
        clone.remove(job_id)
    clone.compact_min = 0
    clone.add(job("y", "q"))  # compacts the copy's rows
    order(clone, "q")
    assert pickle.dumps(db) == before
    assert order(db, "q") == ["g1", "g2", "b"] and db.state("a") == RUNNING
    assert order(clone, "q") == ["g3", "y"]


def test_jobs_on_node_follow_batches_and_single_updates() -> None:
    """Batched leases and ends leave the per-node sets to be rebuilt on read; single updates
    keep them: either way they hold the jobs running on each node."""
    nodes = NodeDb(ResourceIndex())
    for name in ("n1", "n2"):
        nodes.upsert(NodeSpec(id=name, allocatable={"cpu": 8000}))
    db = JobDb(unlimited(), nodes)
    db.add_many([job(f"j{i}", "q", submitted=i) for i in range(6)])
    n1, n2 = nodes.row("n1"), nodes.row("n2")
    assert n1 is not None and n2 is not None

    def on(node: int) -> set[str | None]:
        return {db.ids[row] for row in db.jobs_on_node(node)}

    db.lease_many(["j0", "j1", "j2"], ["n1", "n2", "n1"], ["default"] * 3)
    assert (on(n1), on(n2)) == ({"j0", "j2"}, {"j1"})
    db.lease("j3", "n2", "default")
    db.remove("j0")
    assert (on(n1), on(n2)) == ({"j2"}, {"j1", "j3"})
    db.remove_many(["j2", "j3"])
    db.lease("j4", "n1", "default")
    assert (on(n1), on(n2)) == ({"j4"}, {"j1"})
    clone = db.copy()
    clone.remove("j4")
    assert on(n1) == {"j4"} and not clone.jobs_on_node(n1)
