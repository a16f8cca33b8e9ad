"""Fair-share and urgency preemption, including the seed scenario."""

from __future__ import annotations

from typing import Any

import pytest

from armada.scheduling import RUNNING
from tests.unit.scheduling.helpers import Sim, job, node, unlimited

GPU = "nvidia.com/gpu"


def gpu_job(job_id: str, queue: str, submitted: float) -> object:
    return job(
        job_id,
        queue,
        cpu=1,
        memory_gi=1,
        extra={GPU: 1},
        submitted=submitted,
        priority_class_name="armada-preemptible",
    )


def gpu_cluster(nodes: int = 10) -> Sim:
    per_node = 100 // nodes
    sim = Sim(nodes=[node(f"gpu{i:03d}", cpu=64, memory_gi=512, extra={GPU: per_node}) for i in range(nodes)])
    sim.queue("A", 2.0)
    sim.queue("B", 1.0)
    return sim


def finish_queue(sim: Sim, queue: str) -> None:
    for job_id in [j for j in sim.db.ids if j is not None and j.startswith(queue.lower())]:
        sim.db.remove(job_id)


@pytest.mark.parametrize("nodes", [10, 100, 4])
def test_seed_scenario_weights_burst_and_reclaim(nodes: int) -> None:
    sim = gpu_cluster(nodes)
    sim.submit(gpu_job(f"a{i}", "A", i) for i in range(300))  # type: ignore[misc]
    sim.submit(gpu_job(f"b{i}", "B", i) for i in range(300))  # type: ignore[misc]
    sim.cycle()
    assert (sim.running("A"), sim.running("B")) in {(67, 33), (66, 34)}

    finish_queue(sim, "A")  # A goes idle: its jobs finish and nothing is queued
    sim.cycle()
    assert sim.running("B") == 100

    sim.submit(gpu_job(f"a-again{i}", "A", 1000 + i) for i in range(300))  # type: ignore[misc]
    result = sim.cycle()
    assert abs(sim.running("A") - 67) <= 1 and sim.running("A") + sim.running("B") == 100
    assert len(result.preemptions) == 100 - sim.running("B")
    leased = set(result.leases.job_ids)
    for p in result.preemptions:
        assert p.job_id.startswith("b") and p.preempted_by in leased
        assert "fair share" in p.reason
    # Stable afterwards: no thrash.
    assert not sim.cycle().preemptions


def test_evicted_jobs_keep_their_place_when_nobody_needs_it() -> None:
    sim = gpu_cluster()
    sim.submit(gpu_job(f"b{i}", "B", i) for i in range(100))  # type: ignore[misc]
    sim.cycle()
    sim.submit([gpu_job("a0", "A", 1000)])  # type: ignore[list-item]
    result = sim.cycle()
    assert len(result.preemptions) == 1
    assert result.preemptions[0].preempted_by == "a0"
    assert sim.running("B") == 99


def test_protected_fraction_prevents_preemption() -> None:
    sim = gpu_cluster()
    sim.config = unlimited(protected_fraction_of_fair_share=4.0)
    sim.submit(gpu_job(f"b{i}", "B", i) for i in range(100))  # type: ignore[misc]
    sim.cycle()
    sim.submit(gpu_job(f"a{i}", "A", 1000 + i) for i in range(10))  # type: ignore[misc]
    assert not sim.cycle().preemptions


def test_urgency_preemption_evicts_lower_class_and_names_preemptor() -> None:
    config = unlimited(
        priority_classes={
            "low": {"priority": 100, "preemptible": True},
            "high": {"priority": 1000, "preemptible": False},
        },
        default_priority_class_name="high",
        enable_fair_share_preemption=False,
    )
    sim = Sim(config, nodes=[node("n0", cpu=4), node("n1", cpu=4)])
    sim.queue("A")
    sim.submit(job(f"low{i}", "A", submitted=i, priority_class_name="low") for i in range(8))
    sim.cycle()
    sim.submit([job("urgent", "A", cpu=3, submitted=100, priority_class_name="high")])
    result = sim.cycle()
    assert result.leases.job_ids == ["urgent"]
    assert len(result.preemptions) == 3
    assert {p.preempted_by for p in result.preemptions} == {"urgent"}
    assert {p.node_id for p in result.preemptions} == {result.leases.node_ids[0]}
    # the youngest low-priority jobs on the chosen node go first
    assert sorted(p.job_id for p in result.preemptions) == ["low1", "low2", "low3"]
    assert sim.db.state("low0") == RUNNING


def test_non_preemptible_jobs_are_never_preempted() -> None:
    config = unlimited(
        priority_classes={"low": {"priority": 100}, "high": {"priority": 1000}},
        default_priority_class_name="high",
    )
    sim = Sim(config, nodes=[node("n0", cpu=2)])
    sim.queue("A")
    sim.submit(job(f"low{i}", "A", submitted=i, priority_class_name="low") for i in range(2))
    sim.cycle()
    sim.submit([job("urgent", "A", submitted=100)])
    result = sim.cycle()
    assert not result.leases and not result.preemptions


def test_fair_share_reclaims_only_preemptible_jobs_of_a_queue_over_its_share() -> None:
    """B holds the whole cluster, half of it in ``armada-default`` (not preemptible) and
    younger than its preemptible half: A (weight 2) may take back only the preemptible half,
    even though B stays over its fair share of a third."""
    sim = gpu_cluster()
    sim.submit(gpu_job(f"bp{i}", "B", i) for i in range(50))  # type: ignore[misc]
    sim.submit(job(f"bd{i}", "B", extra={GPU: 1}, submitted=100 + i) for i in range(50))
    sim.cycle()
    assert sim.running("B") == 100
    sim.submit(gpu_job(f"a{i}", "A", 1000 + i) for i in range(300))  # type: ignore[misc]
    result = sim.cycle()
    assert sorted(p.job_id for p in result.preemptions) == sorted(f"bp{i}" for i in range(50))
    assert all(sim.db.state(f"bd{i}") == RUNNING for i in range(50))
    assert (sim.running("A"), sim.running("B")) == (50, 50)
    assert not sim.cycle().preemptions


def test_gang_members_are_preempted_together() -> None:
    config = unlimited(
        priority_classes={"low": {"priority": 100, "preemptible": True}, "high": {"priority": 1000}},
        default_priority_class_name="high",
        enable_fair_share_preemption=False,
    )
    sim = Sim(config, nodes=[node("n0", cpu=2), node("n1", cpu=2)])
    sim.queue("A")
    gang = {"gang_id": "g", "gang_cardinality": 2, "priority_class_name": "low"}
    sim.submit([job("g0", "A", cpu=2, **gang), job("g1", "A", cpu=2, **gang)])  # type: ignore[arg-type]
    sim.cycle()
    assert sim.running("A") == 2
    sim.submit([job("urgent", "A", cpu=2, submitted=5)])
    result = sim.cycle()
    assert sorted(p.job_id for p in result.preemptions) == ["g0", "g1"]
    assert result.leases.job_ids == ["urgent"]


def test_fair_share_is_per_pool() -> None:
    sim = Sim(nodes=[node("a0", cpu=4, pool="a"), node("b0", cpu=4, pool="b")])
    sim.queue("X")
    sim.queue("Y")
    preemptible: dict[str, Any] = {"priority_class_name": "armada-preemptible"}
    sim.submit(job(f"x{i}", "X", submitted=i, **preemptible) for i in range(8))
    sim.cycle()
    assert sim.running("X") == 8
    # Y only wants pool b: X keeps pool a entirely and halves its use of pool b.
    sim.submit(job(f"y{i}", "Y", submitted=10 + i, pools=("b",), **preemptible) for i in range(8))
    result = sim.cycle()
    assert {p.pool for p in result.preemptions} == {"b"} and len(result.preemptions) == 2
    assert result.shares["a"]["X"].actual_share == 1.0
    assert result.shares["b"]["X"].actual_share == result.shares["b"]["Y"].actual_share == 0.5


def test_burst_queue_is_cut_back_to_its_fair_share_at_scale() -> None:
    """Large enough for bulk (fused) placement: the evicted jobs that lose are the youngest."""
    sim = Sim(nodes=[node(f"n{i:02d}", cpu=32, memory_gi=256) for i in range(40)])
    preemptible: dict[str, Any] = {"priority_class_name": "armada-preemptible"}
    sim.queue("burst")
    sim.submit(job(f"burst{i}", "burst", submitted=i, **preemptible) for i in range(1280))
    sim.cycle()
    assert sim.running("burst") == 1280
    for q in range(4):
        sim.queue(f"q{q}")
        sim.submit(job(f"q{q}-{i}", f"q{q}", submitted=2000 + i, **preemptible) for i in range(1000))
    result = sim.cycle()
    assert sim.running("burst") == 1280 // 5
    assert all(sim.running(f"q{q}") == 1280 // 5 for q in range(4))
    lost = sorted(int(p.job_id[5:]) for p in result.preemptions)
    assert lost == list(range(1280 // 5, 1280))  # the youngest runs lose their place
