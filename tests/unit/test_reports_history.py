"""The cycle history: bounded, idle cycles merged, decisions counted by queue/pool/class."""

from __future__ import annotations

from armada.scheduler.history import CycleHistory, CycleRecord
from tests.unit.scheduling.helpers import Sim, job, node


def test_history_is_bounded_merges_idle_cycles_and_counts_leases() -> None:
    sim = Sim(nodes=[node("n1", cpu=2)])
    sim.queue("a")
    sim.submit([job(f"j{i}", "a") for i in range(5)])
    history = CycleHistory(size=3)
    seen: list[CycleRecord] = []
    history.listeners.append(seen.append)
    busy = sim.cycle(apply=False)
    records = [history.record(busy, sim.db) for _ in range(5)]
    assert len(history) == 3
    sim.cycle(advance=0)  # the same decisions, applied as the service's events would be
    for _ in range(4):
        history.record(sim.cycle(), sim.db)  # the node is full: nothing to decide
    assert len(history) == 3
    assert len(seen) == 9
    assert [r.repeats for r in history] == [1, 1, 4]
    last = history.last
    assert last is not None and last.idle and last is seen[-1]
    assert records[0].scheduled == {("a", "default", "armada-default", "no-preemption"): 2}
    [(reason, waiting)] = records[0].top_reasons()
    assert reason.startswith("no node with 1 cpu free in pool default")
    assert waiting == 3
