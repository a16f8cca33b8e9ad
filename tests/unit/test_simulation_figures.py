"""The what-if replay's figures, against hand-computed values."""

from __future__ import annotations

import pytest

from armada.scheduling.replay import NodeChange, TimelineItem
from armada.services.simulation.figures import Busy, figures
from armada.services.simulation.recorded import Outcome, Run
from tests.unit.scheduling.helpers import node

ONE_CPU = {"cpu": 1000}


def outcome(queue: str, submitted: float, *runs: Run, preempted: bool = False) -> Outcome:
    return Outcome(queue=queue, submitted=submitted, requests=ONE_CPU, runs=list(runs), preempted=preempted)


def test_busy_is_the_union_of_the_waits() -> None:
    busy = Busy([outcome("a", 0, Run("p", 2)), outcome("b", 1, Run("p", 4)), outcome("c", 10)], until=20)
    # waits: [0, 2), [1, 4) -> [0, 4); [10, 20) never started
    assert busy.seconds(0, 20) == 14
    assert busy.seconds(3, 12) == 3
    assert busy.seconds(4, 10) == 0


def test_waits_shares_lost_work_and_utilisation() -> None:
    # Two one-cpu nodes in pool "default" for the window [0, 100).
    timeline: list[tuple[float, TimelineItem]] = [
        (0.0, NodeChange("ex", (node("n1", cpu=1), node("n2", cpu=1))))
    ]
    outcomes = {
        "a1": outcome("a", 0, Run("default", 0, 50)),
        "a2": outcome("a", 0, Run("default", 0, 20, lost=True), preempted=True),
        "b1": outcome("b", 0, Run("default", 20, 60)),  # waited 20 s
        "b2": outcome("b", 10),  # never started: waits until 100
    }
    found = figures(outcomes, timeline, {"default": {"a": 0.5, "b": 0.5}}, ["cpu"], (0.0, 100.0))
    a, b = found.queues["a"], found.queues["b"]
    assert (a.mean_wait, b.mean_wait) == (0, 55)
    assert (a.preemptions, b.preemptions) == (1, 0)
    assert a.lost_resource_seconds == {"cpu": 20}
    # Some job waited over [0, 100) (b2): 2 cpus x 100 s contested. a held 50 + 20, b 40.
    assert a.share["default"] == pytest.approx(0.35)
    assert b.share["default"] == pytest.approx(0.20)
    assert b.fair_share == {"default": 0.5}
    assert found.pools["default"].utilisation["cpu"] == pytest.approx(110 / 200)
