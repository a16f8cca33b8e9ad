"""The forecast engine against schedules worked out by hand."""

from __future__ import annotations

import pytest

from armada.scheduling.arrivals import extrapolate
from armada.scheduling.calibration import Calibration
from armada.scheduling.forecast import ROOM_NOW, Draws, ForecastSnapshot, forecast, quantile_of, simulate
from armada.scheduling.probes import forecast_with_probes, typical_jobs
from armada.scheduling.runtimes import RuntimeEstimate
from armada.scheduling.schedule import apply_decisions, schedule
from tests.unit.scheduling.helpers import Sim, job, node, unlimited

NOW = 1000.0


def exact(seconds: float, basis: str = "hint") -> RuntimeEstimate:
    return RuntimeEstimate(seconds, seconds, seconds, basis)


def running(sim: Sim, *jobs: tuple[str, str]) -> None:
    """Queue these (job id, queue) 1-cpu jobs and lease them where the core puts them."""
    sim.submit(job(job_id, queue) for job_id, queue in jobs)
    result = schedule(sim.db, queues=list(sim.queues.values()), config=sim.config, state=sim.state, now=NOW)
    assert len(result.leases) == len(jobs)
    apply_decisions(sim.db, result)


def snapshot(sim: Sim, **kw: object) -> ForecastSnapshot:
    return ForecastSnapshot(
        db=sim.db, queues=list(sim.queues.values()), config=sim.config, state=sim.state, now=NOW, **kw
    )  # type: ignore[arg-type]


def test_single_queue_is_first_in_first_out_as_running_jobs_end() -> None:
    sim = Sim(nodes=[node("n1", cpu=2)])
    sim.queue("q")
    running(sim, ("r1", "q"), ("r2", "q"))
    sim.submit([job("a", "q", submitted=1), job("b", "q", submitted=2), job("c", "q", submitted=3)])
    estimates = {"r1": exact(100), "r2": exact(150, "learned"), **{j: exact(60) for j in "abc"}}
    # r1 ends at +100 -> a; r2 at +150 -> b; a at +160 -> c.
    result = forecast(snapshot(sim, coarsening=0.0), estimates, default=exact(1))
    assert {j: result[j].expected_start for j in "abc"} == {"a": NOW + 100, "b": NOW + 150, "c": NOW + 160}
    assert (result["a"].basis, result["b"].basis) == ("hint", "learned")
    assert all(result[j].simulated == result[j].expected_start for j in "abc")
    # Uncalibrated, the range is the prior's: half to three times the lead.
    assert (result["a"].low, result["a"].high) == (NOW + 50, NOW + 300)
    # The engine worked on a copy: the live db still has a, b and c queued.
    assert sim.db.state("a") == 1 and sim.db.node_of("r1") is not None


def test_elapsed_time_counts_and_an_overdue_job_is_re_estimated() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)])
    sim.queue("q")
    running(sim, ("r", "q"))
    sim.submit([job("a", "q")])
    estimates = {"r": exact(100), "a": exact(10)}
    started_40s_ago = forecast(snapshot(sim, started={"r": NOW - 40}), estimates, default=exact(1))
    assert started_40s_ago["a"].expected_start == NOW + 60
    # Running for 200 s, past its 100 s estimate: expected 1.5 x 200 in all, so 100 s more.
    overdue = forecast(snapshot(sim, started={"r": NOW - 200}), estimates, default=exact(1))
    assert overdue["a"].expected_start == NOW + 100
    assert "re-estimated" in overdue["a"].basis


def test_draws_run_jobs_for_their_own_quantile_instead_of_the_mean() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)])
    sim.queue("q")
    running(sim, ("r", "q"))
    sim.submit([job("a", "q", submitted=1), job("b", "q", submitted=2)])
    spread = RuntimeEstimate(100, 50, 200, "learned")
    estimates = {"r": spread, "a": spread, "b": exact(10)}
    at = snapshot(sim, started={"r": NOW - 40}, coarsening=0.0)
    mean = forecast(at, estimates, default=exact(1), draws=Draws.NONE)
    assert mean["a"].expected_start == pytest.approx(NOW + spread.mean(40))
    assert mean["b"].expected_start == pytest.approx(NOW + spread.mean(40) + spread.mean())
    # The running job ends at its own quantile of what is left after 40 s; with Draws.ALL the
    # queued job runs for its own quantile too (ids fix them: the same at every refresh).
    ends = spread.draw(quantile_of("r"), 40)
    some = forecast(at, estimates, default=exact(1))  # Draws.RUNNING
    assert some["a"].expected_start == pytest.approx(NOW + ends)
    assert some["b"].expected_start == pytest.approx(NOW + ends + spread.mean())
    every = forecast(at, estimates, default=exact(1), draws=Draws.ALL)
    assert every["b"].expected_start == pytest.approx(NOW + ends + spread.draw(quantile_of("a")))
    assert spread.draw(quantile_of("a")) != spread.mean()


def test_the_range_comes_from_the_calibration() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)])
    sim.queue("q")
    running(sim, ("r", "q"))
    sim.submit([job("a", "q")])
    calibration = Calibration()
    for ratio in range(1, 101):  # past forecasts 100 s ahead came true 101 to 200 s after
        calibration.observe(100, 100 + ratio)
    result = forecast(snapshot(sim), {"r": exact(100)}, default=exact(1), calibration=calibration)
    found = result["a"]
    assert found.simulated == found.expected_start == NOW + 100
    # The range: the 5th and 95th percentile ratios, around the expected start (so the
    # low end stays there when every ratio is above 1).
    assert found.low == NOW + 100 and NOW + 193 < found.high < NOW + 197


def test_weighted_fair_share_changes_as_jobs_end() -> None:
    sim = Sim(nodes=[node("n1", cpu=4)])
    sim.queue("A")
    sim.queue("B", factor=3)
    running(sim, *[(f"r{i}", "A") for i in range(1, 5)])
    sim.submit(job(f"a{i}", "A", submitted=i) for i in range(1, 5))
    sim.submit(job(f"b{i}", "B", submitted=i) for i in range(1, 5))
    estimates = {f"r{i}": exact(10 * i) for i in range(1, 5)}
    result = forecast(snapshot(sim, coarsening=0.0), estimates, default=exact(1000))
    starts = {j: f.expected_start - NOW for j, f in result.items() if f.expected_start is not None}
    # One cpu frees every 10 s. Cost = share / weight: A holds 3/4 at +10, B (weight 3) 0 -> b1;
    # +20: A 2/4 vs B 1/12 -> b2; +30: A 1/4 vs B 2/12 -> b3; +40: A 0 -> a1.
    # +1010: b1 ends, A 1/4 vs B 2/12 -> b4; +1020: only A waits -> a2; +1030 a3; +1040 a4.
    assert starts == {
        "b1": 10, "b2": 20, "b3": 30, "a1": 40, "b4": 1010, "a2": 1020, "a3": 1030, "a4": 1040
    }  # fmt: skip
    # With equal weights A's turn comes at +30, when A holds 1/4 and B 2/4; b3 waits for b1.
    sim.queue("B", factor=1)
    equal = forecast(snapshot(sim, coarsening=0.0), estimates, default=exact(1000))
    assert (equal["a1"].expected_start, equal["b3"].expected_start) == (NOW + 30, NOW + 1010)


def test_usage_history_delays_a_queue_that_used_a_lot_recently() -> None:
    config = unlimited(usage_half_life=600.0)
    sim = Sim(config, nodes=[node("n1", cpu=1)])
    sim.queue("A")
    sim.queue("B")
    running(sim, ("r", "B"))
    sim.submit([job("a", "A", submitted=1), job("b", "B", submitted=2)])
    estimates = {"r": exact(100), "a": exact(50), "b": exact(50)}
    # B held the whole node: when r ends, A's lower usage wins even though both hold 0 now.
    result = forecast(snapshot(sim), estimates, default=exact(1))
    assert (result["a"].expected_start, result["b"].expected_start) == (NOW + 100, NOW + 150)


def test_gang_waits_for_room_for_all_its_members() -> None:
    sim = Sim(nodes=[node("n1", cpu=2), node("n2", cpu=2)])
    sim.queue("q")
    running(sim, ("r1", "q"), ("r2", "q"), ("r3", "q"))
    gang = {"gang_id": "g", "gang_cardinality": 3}
    sim.submit([job(f"g{i}", "q", cpu=1, submitted=1, **gang) for i in range(3)])
    sim.submit([job("late", "q", submitted=5)])
    estimates = {"r1": exact(10), "r2": exact(20), "r3": exact(30)}
    result = forecast(snapshot(sim), estimates, default=exact(100))
    # One cpu is free now: the gang (3 x 1 cpu) cannot start, the single job behind it can.
    assert result["late"].expected_start == NOW and result["late"].basis == ROOM_NOW
    # r1 (+10) and r2 (+20) free two cpus, still one short; r3 at +30 leaves three: all start.
    assert {result[f"g{i}"].expected_start for i in range(3)} == {NOW + 30}


def test_not_within_horizon_and_never() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)])
    sim.queue("q")
    running(sim, ("r", "q"))
    sim.submit([job("a", "q"), job("huge", "q", cpu=64)])
    result = forecast(snapshot(sim), {"r": exact(10_000)}, default=exact(1), horizon=3600)
    assert result["a"].expected_start is None and result["a"].basis == "not within the horizon"
    assert result["huge"].expected_start is None and "fits no node shape" in result["huge"].rejected


def test_jobs_not_yet_submitted_are_forecast_without_changing_the_snapshot() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)])
    sim.queue("q")
    running(sim, ("r", "q"))
    extra = [job("new", "q", submitted=NOW)]
    result = forecast(snapshot(sim, extra_jobs=extra), {"r": exact(30)}, default=exact(5))
    assert result["new"].expected_start == NOW + 30
    assert "new" not in sim.db


def test_simulation_stops_when_nothing_can_change() -> None:
    sim = Sim(nodes=[node("n1", cpu=1, unschedulable=True)])
    sim.queue("q")
    sim.submit([job("a", "q")])
    result = simulate(snapshot(sim), lambda job_ids: ([1.0] * len(job_ids), ["x"] * len(job_ids)))
    assert result.starts == {} and result.cycles == 1


@pytest.mark.parametrize(("low", "high", "elapsed"), [(50, 200, 0.0), (100, 100, 0.0), (100, 100, 99.0)])
def test_remaining_of_an_exact_estimate_or_at_the_start_is_the_difference(
    low: float, high: float, elapsed: float
) -> None:
    left = RuntimeEstimate(100, low, high, "hint").remaining(elapsed)
    assert (left.expected, left.high) == (100 - elapsed, high - elapsed)
    assert left.low == max(low, elapsed) - elapsed


def test_extrapolated_arrivals_of_a_favoured_queue_overtake() -> None:
    sim = Sim(nodes=[node("n1", cpu=1)], config=unlimited())
    sim.queue("slow", factor=1)
    sim.queue("fast", factor=10)
    running(sim, ("r", "fast"))
    sim.submit([job("mine", "slow", submitted=NOW - 10)])
    # "fast" submitted one job in the last 100 s: it will again at +50 (and +150, ...).
    recent = [job("f1", "fast", submitted=NOW - 50)]
    arrivals = extrapolate(recent, now=NOW, window=100, until=NOW + 1000)
    assert [(at, j.id) for at, j in arrivals[:2]] == [(NOW + 50, "~1~f1"), (NOW + 150, "~2~f1")]
    estimates = {"r": exact(60), "f1": exact(50), "mine": exact(10)}
    alone = forecast(snapshot(sim, coarsening=0.0), estimates, default=exact(1))
    assert alone["mine"].expected_start == NOW + 60
    # r ends at +60, but the copy of f1 (queued since +50, runtime 50 as its original's)
    # wins the node then (both queues hold nothing; "fast" weighs 10); "mine" starts when
    # it ends at +110, before the next copy arrives at +150. Copies are never reported.
    crowded = forecast(snapshot(sim, coarsening=0.0, arrivals=arrivals), estimates, default=exact(1))
    assert crowded["mine"].expected_start == NOW + 110
    assert set(crowded) == {"mine"}


def test_a_probe_of_the_typical_shape_is_forecast_like_a_new_job() -> None:
    sim = Sim(nodes=[node("n1", cpu=2)])
    sim.queue("q")
    running(sim, ("r", "q"))
    gang = {"gang_id": "g", "gang_cardinality": 3, "submitted": 3}
    sim.submit([job("a", "q", submitted=1), job("big", "q", cpu=2, submitted=2)])
    sim.submit([job(f"g{i}", "q", **gang) for i in range(3)])  # most common, but a gang: not typical
    [(queue, probe)] = typical_jobs(sim.db, NOW).items()
    assert queue == "q" and probe.job.requests == job("x", "q").requests and "cpu=1" in probe.shape
    found = forecast(snapshot(sim, extra_jobs=[probe.job]), {"r": exact(10)}, default=exact(100))
    # a takes the free cpu now; at +10 r's cpu frees: big needs two, the probe one: the core
    # places the probe (no reservation for big), which then waits for a (+100) and the probe
    # (+110). The gang of three 1-cpu members never has room on one 2-cpu node.
    assert (found["a"].expected_start, found[probe.job.id].expected_start) == (NOW, NOW + 10)
    assert found["big"].expected_start == NOW + 110
    assert found["g0"].expected_start is None


def test_probes_forecast_with_the_jobs_take_no_room_from_them() -> None:
    sim = Sim(nodes=[node("n1", cpu=2)])
    sim.queue("q")
    sim.queue("other")
    running(sim, ("r", "q"))
    sim.submit(
        [job("a", "q", submitted=1), job("big", "q", cpu=2, submitted=2), job("o", "other", submitted=3)]
    )
    estimates = {"r": exact(10), "a": exact(100), "big": exact(50), "o": exact(30)}
    alone = forecast(snapshot(sim, coarsening=0.0), estimates, default=exact(1))
    jobs, probes = forecast_with_probes(snapshot(sim, coarsening=0.0), estimates, default=exact(1))
    # The real jobs' forecasts are those without probes: a probe runs for no time.
    assert jobs == alone
    # o takes the free cpu now (its queue is below its share), a r's at +10; big needs both
    # cpus: +110, when a ends. At +30 o's cpu frees: other's probe takes it (its queue further
    # below its share) and ends at once; q's probe, behind big but with no room reserved for
    # big, takes it one step later: probes cost each other a step, never a real job room.
    assert {j: alone[j].expected_start for j in ("o", "a", "big")} == {
        "o": NOW,
        "a": NOW + 10,
        "big": NOW + 110,
    }
    assert {queue: found.expected_start for queue, (_, found) in probes.items()} == {
        "q": NOW + 31,
        "other": NOW + 30,
    }
    # A probe's end frees no room in the bases: q's probe starts on o's end.
    assert (probes["q"][1].basis, probes["other"][1].basis) == ("hint", "hint")
