"""Behaviour of one and several cycles: fair share, bursting, gangs, limits, reasons."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest

from armada.model.resources import ResourceIndex
from armada.scheduling import (
    RUNNING,
    JobDb,
    NodeDb,
    NodeSpec,
    QueueSpec,
    SchedulerState,
    SchedulingConfig,
    Taint,
    Toleration,
    apply_decisions,
    requirements_from_pod_spec,
    schedule,
)
from armada.scheduling.decisions import CYCLE_LEASE_CAP, GLOBAL_RATE_LIMITED, QUEUE_RATE_LIMITED
from tests.unit.scheduling.helpers import Sim, job, node, unlimited


def test_weighted_drf_splits_capacity_by_priority_factor() -> None:
    sim = Sim(nodes=[node(f"n{i}", cpu=10, memory_gi=100) for i in range(3)])
    sim.queue("A", 2.0)
    sim.queue("B", 1.0)
    sim.submit(job(f"a{i}", "A") for i in range(100))
    sim.submit(job(f"b{i}", "B") for i in range(100))
    result = sim.cycle()
    counts = Counter(lease.job_id[0] for lease in result.leases)
    assert counts == {"a": 20, "b": 10}
    shares = result.shares["default"]
    assert shares["A"].fair_share == pytest.approx(2 / 3)
    assert shares["A"].actual_share == pytest.approx(2 / 3)


def test_paused_executors_take_no_new_jobs_but_their_jobs_still_count() -> None:
    sim = Sim(
        nodes=[
            msgspec.structs.replace(node("a0", cpu=10), executor="ex-a"),
            msgspec.structs.replace(node("b0", cpu=10), executor="ex-b"),
        ]
    )
    sim.queue("A")
    sim.queue("B")
    sim.submit(job(f"a{i}", "A") for i in range(5))
    first = sim.cycle(paused_executors=["ex-b"])
    assert {lease.node_id for lease in first.leases} == {"a0"} and len(first.leases) == 5
    sim.submit(job(f"b{i}", "B") for i in range(20))
    second = sim.cycle(paused_executors=["ex-a", "ex-b"])
    assert len(second.leases) == 0, "every executor is behind: nothing is leased"
    third = sim.cycle()
    assert Counter(lease.node_id for lease in third.leases) == {"a0": 5, "b0": 10}
    assert third.shares["default"]["A"].actual_share == pytest.approx(0.25), "A's 5 paused-time jobs count"


def test_idle_queue_share_is_usable_by_others() -> None:
    sim = Sim(nodes=[node("n0", cpu=10, memory_gi=100)])
    sim.queue("A", 2.0)
    sim.queue("B", 1.0)
    sim.submit(job(f"b{i}", "B") for i in range(20))
    result = sim.cycle()
    assert len(result.leases) == 10
    assert result.shares["default"]["B"].adjusted_fair_share == pytest.approx(1.0)


def test_demand_capped_queue_leaves_rest_to_others() -> None:
    sim = Sim(nodes=[node("n0", cpu=10, memory_gi=100)])
    for name in "ABC":
        sim.queue(name)
    sim.submit([job("a0", "A")])
    sim.submit(job(f"b{i}", "B") for i in range(20))
    sim.submit(job(f"c{i}", "C") for i in range(20))
    result = sim.cycle()
    counts = Counter(lease.job_id[0] for lease in result.leases)
    assert counts in ({"a": 1, "b": 5, "c": 4}, {"a": 1, "b": 4, "c": 5})
    assert result.shares["default"]["A"].adjusted_fair_share == pytest.approx(0.1)
    assert result.shares["default"]["B"].adjusted_fair_share == pytest.approx(0.45)


def test_queue_order_priority_class_then_priority_then_age() -> None:
    config = unlimited(
        priority_classes={
            "low": {"priority": 100, "preemptible": False},
            "high": {"priority": 200, "preemptible": False},
        },
        default_priority_class_name="low",
    )
    sim = Sim(config, nodes=[node("n0", cpu=2, memory_gi=100)])
    sim.queue("A")
    sim.submit(
        [
            job("old-low", "A", submitted=1, priority_class_name="low"),
            job("new-low-urgent", "A", submitted=3, priority=-5, priority_class_name="low"),
            job("new-high", "A", submitted=2, priority_class_name="high"),
            job("newest-low", "A", submitted=4, priority_class_name="low"),
        ]
    )
    result = sim.cycle()
    assert sorted(result.leases.job_ids) == ["new-high", "new-low-urgent"]


def test_reprioritize_takes_effect_next_cycle() -> None:
    sim = Sim(nodes=[node("n0", cpu=1, memory_gi=100)])
    sim.queue("A")
    sim.submit([job("first", "A", submitted=1), job("second", "A", submitted=2)])
    sim.db.reprioritize("second", -1.0)
    assert sim.cycle().leases.job_ids == ["second"]


def test_unschedulable_reason_is_concrete() -> None:
    sim = Sim(nodes=[node(f"n{i}", cpu=32, memory_gi=256) for i in range(3)])
    sim.queue("A")
    sim.submit([job("filler", "A", cpu=20, submitted=0)])
    sim.cycle()
    sim.submit([job("big", "A", cpu=31, submitted=1), job("bigger", "A", cpu=31, submitted=2)])
    sim.submit([job(f"x{i}", "A", cpu=31, submitted=3) for i in range(2)])
    result = sim.cycle()
    assert len(result.leases) == 2
    waiting = [j for j in ("big", "bigger", "x0", "x1") if j not in result.leases.job_ids]
    reason = result.reasons.for_job(sim.db, waiting[0])
    assert reason == (
        "no node with 31 cpu free in pool default; 3 nodes match selector; best has 12 cpu free"
    )
    assert result.queue_summary["A"] == {reason: 2}


def test_selector_taints_and_rejection() -> None:
    sim = Sim(
        nodes=[
            node("cpu-node", labels={"kind": "cpu"}),
            node("gpu-node", labels={"kind": "gpu"}, taints=(Taint("gpu", "true", "NoSchedule"),)),
        ]
    )
    sim.queue("A")
    tolerate = (Toleration(key="gpu", operator="Exists"),)
    sim.submit(
        [
            job("wants-gpu", "A", node_selector={"kind": "gpu"}),
            job("wants-gpu-tolerates", "A", node_selector={"kind": "gpu"}, tolerations=tolerate),
            job("huge", "A", cpu=64),
            job("nowhere", "A", node_selector={"kind": "tpu"}),
        ]
    )
    result = sim.cycle(apply=False)
    assert dict(zip(result.leases.job_ids, result.leases.node_ids, strict=True)) == {
        "wants-gpu-tolerates": "gpu-node"
    }
    assert {r.job_id for r in result.rejections} == {"wants-gpu", "huge", "nowhere"}
    huge = next(r for r in result.rejections if r.job_id == "huge")
    assert "64 cpu" in huge.reason and "best has 8 cpu" in huge.reason


def test_pools_are_scheduled_independently_and_jobs_may_restrict_pools() -> None:
    sim = Sim(nodes=[node("a0", cpu=2, pool="a"), node("b0", cpu=2, pool="b")])
    sim.queue("Q")
    sim.submit([job(f"j{i}", "Q", submitted=i, pools=("b",)) for i in range(3)])
    sim.submit([job("any", "Q", submitted=10)])
    result = sim.cycle()
    placed = dict(zip(result.leases.job_ids, result.leases.pools, strict=True))
    assert placed == {"j0": "b", "j1": "b", "any": "a"}


def test_gang_all_or_nothing_and_incomplete_reason() -> None:
    sim = Sim(nodes=[node(f"n{i}", cpu=2) for i in range(2)])
    sim.queue("A")
    gang: dict[str, Any] = {"gang_id": "g1", "gang_cardinality": 3}
    sim.submit([job("g1-0", "A", **gang), job("g1-1", "A", **gang)])
    result = sim.cycle()
    assert not result.leases
    assert result.reasons.for_job(sim.db, "g1-0") == "gang incomplete 2/3"
    sim.submit([job("g1-2", "A", **gang)])
    assert sorted(sim.cycle().leases.job_ids) == ["g1-0", "g1-1", "g1-2"]
    too_big: dict[str, Any] = {"gang_id": "g2", "gang_cardinality": 2}
    sim.submit([job("g2-0", "A", cpu=1, **too_big), job("g2-1", "A", cpu=1, **too_big)])
    result = sim.cycle()
    assert not result.leases
    assert result.reasons.for_job(sim.db, "g2-0").startswith("gang of 2 does not fit")


def test_gang_node_uniformity_label() -> None:
    nodes = [node(f"{zone}{i}", cpu=2, labels={"zone": zone}) for zone in "ab" for i in range(2)]
    sim = Sim(nodes=nodes)
    sim.queue("A")
    sim.submit([job("filler", "A", cpu=1, submitted=0, node_selector={"zone": "a"})])
    sim.cycle()
    gang: dict[str, Any] = {
        "gang_id": "g",
        "gang_cardinality": 4,
        "gang_node_uniformity_label": "zone",
        "submitted": 1,
    }
    sim.submit([job(f"g{i}", "A", **gang) for i in range(4)])
    result = sim.cycle()
    assert sorted(result.leases.node_ids) == ["b0", "b0", "b1", "b1"]


def test_rate_limits_carry_across_cycles() -> None:
    config = unlimited(maximum_scheduling_rate=2.0, maximum_scheduling_burst=5)
    sim = Sim(config, nodes=[node("n0", cpu=100, memory_gi=1000)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(20))
    first = sim.cycle(advance=0)
    assert len(first.leases) == 5
    assert first.reasons.for_job(sim.db, "a10") == GLOBAL_RATE_LIMITED
    assert len(sim.cycle(advance=1.0).leases) == 2
    assert len(sim.cycle(advance=10.0).leases) == 5


def test_max_leases_caps_a_cycle_in_fair_order_and_takes_only_the_tokens_leased() -> None:
    config = unlimited(maximum_scheduling_rate=1.0, maximum_scheduling_burst=10)
    sim = Sim(config, nodes=[node("n0", cpu=100, memory_gi=1000)])
    sim.queue("A")
    sim.queue("B")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(20))
    sim.submit(job(f"b{i}", "B", submitted=i) for i in range(20))
    first = sim.cycle(advance=0, max_leases=4)
    assert Counter(j[0] for j in first.leases.job_ids) == {"a": 2, "b": 2}
    assert first.reasons.for_job(sim.db, "a10") == CYCLE_LEASE_CAP
    second = sim.cycle(advance=0)
    assert len(second.leases) == 6, "the bucket of 10 gave up only the 4 tokens leased"
    assert second.reasons.for_job(sim.db, "a10") == GLOBAL_RATE_LIMITED
    assert len(sim.cycle(advance=0, max_leases=0).leases) == 0


def test_per_queue_rate_limit() -> None:
    config = unlimited(maximum_per_queue_scheduling_rate=1.0, maximum_per_queue_scheduling_burst=3)
    sim = Sim(config, nodes=[node("n0", cpu=100, memory_gi=1000)])
    sim.queue("A")
    sim.queue("B")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(10))
    sim.submit(job(f"b{i}", "B", submitted=i) for i in range(2))
    result = sim.cycle()
    assert Counter(j[0] for j in result.leases.job_ids) == {"a": 3, "b": 2}
    assert result.queue_summary["A"] == {QUEUE_RATE_LIMITED: 7}


def test_priority_class_fraction_limits_a_queue() -> None:
    config = unlimited(
        priority_classes={
            "armada-default": {"priority": 1000, "maximumResourceFractionPerQueue": {"cpu": 0.25}}
        }
    )
    sim = Sim(config, nodes=[node("n0", cpu=8, memory_gi=1000)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(8))
    result = sim.cycle()
    assert len(result.leases) == 2
    assert (
        result.reasons.for_job(sim.db, "a5")
        == "queue A over its armada-default resource limit in pool default"
    )


def test_max_queue_lookback() -> None:
    sim = Sim(unlimited(max_queue_lookback=3), nodes=[node("n0", cpu=100, memory_gi=1000)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(10))
    result = sim.cycle()
    assert len(result.leases) == 3
    assert result.reasons.for_job(sim.db, "a9") == "beyond maxQueueLookback (3)"


def test_time_budget_stops_cleanly() -> None:
    ticks = iter(range(1000))
    config = unlimited(max_scheduling_duration=2.5)
    sim = Sim(config, nodes=[node(f"n{i}", cpu=1, labels={"n": str(i)}) for i in range(10)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i, node_selector={"n": str(i)}) for i in range(10))
    result = schedule(
        sim.db,
        queues=list(sim.queues.values()),
        config=config,
        state=sim.state,
        now=0.0,
        clock=lambda: float(next(ticks)),
    )
    assert result.stats.stopped == "time budget"
    assert result.reasons.cycle.startswith("scheduling cycle stopped")


def test_maximum_resource_fraction_to_schedule() -> None:
    sim = Sim(unlimited(maximum_resource_fraction_to_schedule={"cpu": 0.5}), nodes=[node("n0", cpu=10)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(10))
    assert len(sim.cycle().leases) == 5
    assert len(sim.cycle().leases) == 5


def test_decisions_are_deterministic() -> None:
    def run() -> list[tuple[str, str]]:
        sim = Sim(nodes=[node(f"n{i}", cpu=4) for i in range(5)])
        for q in "ABC":
            sim.queue(q, factor=1.0 + "ABC".index(q))
            sim.submit(job(f"{q}{i}", q, cpu=1 + i % 3, submitted=i) for i in range(10))
        result = sim.cycle()
        return list(zip(result.leases.job_ids, result.leases.node_ids, strict=True))

    assert run() == run()


def test_schedule_only_reads_the_job_db() -> None:
    sim = Sim(nodes=[node("n0", cpu=4)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(6))
    before = (list(sim.db.ids), sim.db.cols["state"].copy(), [dict(c) for c in sim.db.queued_counts])
    result = sim.cycle(apply=False)
    assert len(result.leases) == 4
    after = (list(sim.db.ids), sim.db.cols["state"].copy(), [dict(c) for c in sim.db.queued_counts])
    assert before[0] == after[0] and (before[1] == after[1]).all() and before[2] == after[2]


def test_key_summary_counts_waiting_jobs_per_key() -> None:
    sim = Sim(nodes=[node("n0", cpu=2)])
    sim.queue("A")
    sim.queue("B")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(3))
    sim.submit(job(f"b{i}", "B", submitted=i) for i in range(3))
    result = sim.cycle()
    key = int(sim.db.cols["key"][sim.db.row("a2")])
    assert sum(result.key_summary[key].values()) == 4
    assert sim.db.keys.infos[key].describe() == "cpu=1 memory=1Gi armada-default"


def test_gang_with_differing_members_is_reported_not_scheduled() -> None:
    sim = Sim(nodes=[node("n0", cpu=8)])
    sim.queue("A")
    gang: dict[str, Any] = {"gang_id": "g", "gang_cardinality": 2}
    sim.submit([job("g0", "A", cpu=1, **gang), job("g1", "A", cpu=2, **gang)])
    result = sim.cycle()
    assert not result.leases
    assert result.reasons.for_job(sim.db, "g0") == "gang members have different scheduling requirements"


def test_class_limit_does_not_block_other_classes_of_the_queue() -> None:
    limited = {"priority": 1000, "maximumResourceFractionPerQueue": {"cpu": 0.25}}
    config = unlimited(
        priority_classes={"armada-default": limited, "free": {"priority": 1000}},
        default_priority_class_name="armada-default",
    )
    sim = Sim(config, nodes=[node("n0", cpu=8, memory_gi=1000)])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(6))
    sim.submit(job(f"f{i}", "A", submitted=10 + i, priority_class_name="free") for i in range(3))
    result = sim.cycle()
    assert sorted(result.leases.job_ids) == ["a0", "a1", "f0", "f1", "f2"]


def test_interface_as_the_service_uses_it() -> None:
    """The flow documented in ``armada.scheduling``: pod spec in, JSON-encodable decisions out."""
    config = SchedulingConfig()
    nodes = NodeDb(ResourceIndex())
    db = JobDb(config, nodes)
    empty = schedule(db, queues=[], config=config, state=SchedulerState(), now=0.0)
    assert empty.reasons.cycle == "no nodes reported by any executor"
    nodes.upsert(NodeSpec(id="n1", executor="cluster-a", allocatable={"cpu": 4000, "memory": 8 * 2**30}))
    pod = {"containers": [{"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]}
    for i in range(2):
        db.add(requirements_from_pod_spec(job_id=f"j{i}", queue="q", pod_spec=pod, submitted=float(i)))
    result = schedule(db, queues=[QueueSpec("q")], config=config, state=SchedulerState(), now=1.0)
    assert [(lease.job_id, lease.node_id, lease.executor) for lease in result.leases] == [
        ("j0", "n1", "cluster-a")
    ]
    assert result.reasons.for_job(db, "j1").startswith("no node with 3 cpu free in pool default")
    encoded = msgspec.json.decode(msgspec.json.encode(result))
    assert encoded["queue_summary"] == {"q": {result.reasons.for_job(db, "j1"): 1}}
    apply_decisions(db, result)
    assert db.state("j0") == RUNNING


def test_every_job_takes_one_of_its_nodes_pods() -> None:
    """A node's ``pods`` capacity (less the pods Armada did not place) bounds its jobs, across
    cycles; a node that reports no ``pods`` capacity is not limited by it."""
    limited = node("limited", cpu=64, memory_gi=512, extra={"pods": 110}, non_armada_allocated={"pods": 7})
    sim = Sim(nodes=[limited])
    sim.queue("A")
    sim.submit(job(f"a{i}", "A", cpu=0.1, memory_gi=0.1, submitted=i) for i in range(100))
    assert len(sim.cycle().leases) == 100
    sim.submit(job(f"b{i}", "A", cpu=0.1, memory_gi=0.1, submitted=100 + i) for i in range(10))
    result = sim.cycle()
    assert len(result.leases) == 3, "110 pods less 7 others less 100 running: 3 more"
    waiting = next(j for j in (f"b{i}" for i in range(10)) if j not in result.leases.job_ids)
    assert result.reasons.for_job(sim.db, waiting).startswith("no node with 1 pods free")
    sim.nodes.upsert(node("unlimited", cpu=64, memory_gi=512))
    assert len(sim.cycle().leases) == 7


def test_a_gang_does_not_fit_a_node_short_of_pods() -> None:
    sim = Sim(nodes=[node("n0", cpu=64, extra={"pods": 3}), node("n1", cpu=64, extra={"pods": 2})])
    sim.queue("A")
    gang = {"gang_id": "g", "gang_cardinality": 4}
    sim.submit(job(f"g{i}", "A", **gang) for i in range(4))
    assert len(sim.cycle().leases) == 4  # 3 + 1: pods are counted per node
    sim.submit(job(f"h{i}", "A", gang_id="h", gang_cardinality=2) for i in range(2))
    assert len(sim.cycle().leases) == 0, "one pod left in all: the gang of 2 waits"
