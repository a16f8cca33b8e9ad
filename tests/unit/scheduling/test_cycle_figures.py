"""Upstream's per-cycle figures: jobs and gangs considered and scheduled, evictions, per queue and pool."""

from __future__ import annotations

from armada.scheduling import SchedulingConfig
from armada.scheduling.figures import QueueFigures
from tests.unit.scheduling.helpers import Sim, job, node


def test_a_gang_counts_as_one_gang_and_single_jobs_as_one_each() -> None:
    sim = Sim(nodes=[node("n1", cpu=4)])
    sim.queue("a")
    sim.queue("b")
    gang = [job(f"g{i}", "a", gang_id="g", gang_cardinality=2) for i in range(2)]
    sim.submit([*gang, job("a1", "a"), job("b1", "b"), job("b2", "b", cpu=8)])
    result = sim.cycle()
    figures = result.figures["default"]
    assert figures["a"] == QueueFigures(jobs_considered=3, gangs_considered=2, gangs_scheduled=2)
    # b2 fits no node: rejected before the loop, never considered.
    assert figures["b"] == QueueFigures(jobs_considered=1, gangs_considered=1, gangs_scheduled=1)
    assert set(result.pool_seconds) == {"default"}


def test_fair_share_evictions_are_counted_with_their_resources() -> None:
    sim = Sim(SchedulingConfig(enable_fair_share_preemption=True), nodes=[node("n1", cpu=4)])
    sim.queue("greedy")
    sim.submit([job(f"g{i}", "greedy", priority_class_name="armada-preemptible") for i in range(4)])
    sim.cycle()
    sim.queue("late")
    sim.submit([job(f"l{i}", "late") for i in range(2)])
    result = sim.cycle()
    evicted = result.figures["default"]["greedy"]
    assert evicted.evicted_jobs >= len(result.preemptions) > 0
    assert evicted.evicted["cpu"] == evicted.evicted_jobs * 1000
    assert {p.kind for p in result.preemptions} == {"fairshare"}
