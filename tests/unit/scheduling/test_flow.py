"""A queue's steady flow of expected arrivals, worked out by hand."""

from __future__ import annotations

from armada.scheduling.arrivals import original_id
from armada.scheduling.flow import FLOW_BASIS, Submitted, flow_id, size, steady_flow
from armada.scheduling.forecast import ForecastSnapshot, forecast
from armada.scheduling.runtimes import RuntimeEstimate
from armada.scheduling.schedule import apply_decisions, schedule
from tests.unit.scheduling.helpers import Sim, job, node, unlimited

NOW = 1000.0
GI = 2**30


def submitted(queue: str, at: float, cpu: int, runtime: float) -> Submitted:
    return Submitted(queue, at, {"cpu": cpu * 1000, "memory": cpu * GI}, runtime)


def test_size_is_the_largest_ratio_to_the_typical_shape() -> None:
    typical = {"cpu": 1000, "memory": 2 * GI}
    assert size({"cpu": 2000, "memory": 2 * GI}, typical) == 2.0
    assert size({"cpu": 500, "memory": 4 * GI}, typical) == 2.0
    assert size({"gpu": 1}, {}) == 1.0


def test_the_window_s_work_arrives_again_as_evenly_spaced_typical_jobs() -> None:
    typical = {"b": job("~probe~b", "b", cpu=1)}
    recent = [
        submitted("b", NOW - 80, cpu=2, runtime=30),  # 2 typical jobs for 30 s: 60
        submitted("b", NOW - 20, cpu=1, runtime=40),  # 40
        submitted("b", NOW - 150, cpu=1, runtime=1000),  # before the window
        submitted("c", NOW - 10, cpu=1, runtime=10),  # no typical shape: no flow
    ]
    arrivals, runtimes = steady_flow(recent, typical, now=NOW, window=100, until=NOW + 200)
    # 2 jobs of 100 typical-job seconds in 100 s: one job every 50 s, each running 50 s,
    # the first half an interval from now.
    assert [at - NOW for at, _ in arrivals] == [25, 75, 125, 175]
    assert [j.id for _, j in arrivals] == [f"~{k}~~flow~b" for k in range(4)]
    assert {original_id(j.id) for _, j in arrivals} == {flow_id("b")}
    assert all(j.submitted == at and j.requests == typical["b"].requests for at, j in arrivals)
    assert runtimes == {flow_id("b"): RuntimeEstimate(50, 50, 50, FLOW_BASIS)}
    assert steady_flow(recent, typical, now=NOW, window=0, until=NOW + 200) == ([], {})


def test_the_flow_of_a_favoured_queue_takes_its_capacity_in_the_forecast() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)], config=unlimited())
    sim.queue("slow", factor=1)
    sim.queue("fast", factor=10)
    sim.submit([job("r", "fast")])
    apply_decisions(
        sim.db,
        schedule(sim.db, queues=list(sim.queues.values()), config=sim.config, state=sim.state, now=NOW),
    )
    sim.submit([job("mine", "slow", submitted=NOW - 10)])
    recent = [submitted("fast", NOW - 50, cpu=1, runtime=30)]
    arrivals, runtimes = steady_flow(
        recent, {"fast": job("~probe~fast", "fast")}, now=NOW, window=100, until=NOW + 300
    )
    estimates = {
        "r": RuntimeEstimate(60, 60, 60, "hint"),
        "mine": RuntimeEstimate(10, 10, 10, "hint"),
        **runtimes,
    }
    snapshot = ForecastSnapshot(
        db=sim.db,
        queues=list(sim.queues.values()),
        config=sim.config,
        state=sim.state,
        now=NOW,
        coarsening=0.0,
        arrivals=arrivals,
    )
    # r ends at +60; the flow's first job (arrived at +50, 30 s) takes the node until +90,
    # then "mine" starts, before the next arrives at +150. Flow jobs are never reported.
    found = forecast(snapshot, estimates, default=RuntimeEstimate(1, 1, 1, "default"))
    assert found["mine"].expected_start == NOW + 90
    assert set(found) == {"mine"}
