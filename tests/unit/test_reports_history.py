"""The cycle history: bounded, counts decisions by queue/pool/class, remembers reasons not jobs."""

from __future__ import annotations

from armada.reports.history import CycleHistory, CycleRecord
from tests.unit.scheduling.helpers import Sim, job, node


def test_history_keeps_the_last_cycles_and_counts_leases() -> None:
    sim = Sim(nodes=[node("n1", cpu=2)])
    sim.queue("a")
    sim.submit([job(f"j{i}", "a") for i in range(5)])
    history = CycleHistory(size=3)
    seen: list[CycleRecord] = []
    history.listeners.append(seen.append)
    first = sim.cycle(apply=False)
    record = history.record(first, sim.db)
    sim.cycle(advance=0)  # the same decisions, applied as the service's events would be
    for _ in range(4):
        history.record(sim.cycle(), sim.db)
    assert len(history) == 3
    assert len(seen) == 5
    assert record.scheduled == {("a", "default", "armada-default"): 2}
    assert history.last is seen[-1]
    assert sum(r.scheduled.total() for r in history) == 0
    [(reason, waiting)] = record.top_reasons()
    assert reason.startswith("no node with 1 cpu free in pool default")
    assert waiting == 3
