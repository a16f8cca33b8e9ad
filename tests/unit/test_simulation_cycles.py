"""When the live cycles decided, inferred from what they leased (by hand)."""

from __future__ import annotations

from armada.services.simulation.cycles import ROUNDING, CycleLog

TWO_CPUS = {"cpu": 2000}
ONE_CPU = {"cpu": 1000}


def test_a_cycle_decides_once_it_has_seen_the_jobs_it_leased() -> None:
    log = CycleLog()
    log.leased(1.012, "a", "n1", 1.000, ONE_CPU, TWO_CPUS)
    # One cycle: leases recorded within ONE_CYCLE of each other; b arrived after the first
    # cycle decided (it was not leased then, though there was room).
    log.leased(1.070, "b", "n2", 1.030, ONE_CPU, TWO_CPUS)
    log.leased(1.075, "c", "n2", 1.020, ONE_CPU, TWO_CPUS)
    timing = log.timing(median_latency=0.05)
    assert timing.instants == (1.012, 1.070)
    # Not the median latency before the instants (0.962 would miss a, 1.020 would see b too).
    assert timing.decided == (1.000 + ROUNDING, 1.030 + ROUNDING)
    assert timing.latencies == (1.012 - timing.decided[0], 1.070 - timing.decided[1])


def test_a_lease_onto_a_full_node_waits_for_the_ends_that_made_room() -> None:
    log = CycleLog()
    for job_id in ("a", "b"):
        log.leased(0.0, job_id, "n1", 0.0, ONE_CPU, TWO_CPUS)
    log.ended(5.0, "a")
    log.ended(5.5, "b")
    log.ended(9.0, "b")  # a later event of the same run changes nothing
    log.leased(6.0, "c", "n1", 1.0, ONE_CPU, TWO_CPUS)  # a's end made room
    log.leased(7.0, "d", "n1", 1.0, ONE_CPU, TWO_CPUS)  # b's end did
    log.leased(7.5, "e", "n2", 1.0, ONE_CPU, TWO_CPUS)  # another node had room all along
    timing = log.timing(median_latency=0.1)
    # The first cycle decided when it saw a and b, but not after its leases.
    assert timing.decided[:3] == (0.0, 5.0 + ROUNDING, 5.5 + ROUNDING)
    # e's cycle shows nothing it saw since the cycle before decided: the median latency.
    assert timing.decided[3] == 7.5 - 0.1


def test_decisions_follow_each_other_and_never_come_after_the_leases() -> None:
    log = CycleLog()
    log.leased(2.0, "a", "n1", 1.99, ONE_CPU, TWO_CPUS)
    log.leased(2.05, "b", "n1", 0.0, ONE_CPU, TWO_CPUS)  # explained by nothing new
    timing = log.timing(median_latency=0.5)
    assert timing.decided[0] == 1.99 + ROUNDING
    assert timing.decided[0] < timing.decided[1] <= 2.05


def test_a_retried_job_was_ready_when_its_last_run_ended() -> None:
    log = CycleLog()
    log.leased(0.5, "a", "n1", 0.0, ONE_CPU, TWO_CPUS)
    log.ended(3.0, "a")  # failed, and queued again
    log.leased(3.04, "a", "n1", 0.0, ONE_CPU, TWO_CPUS)
    assert log.timing(median_latency=0.01).decided == (0.0 + ROUNDING, 3.0 + ROUNDING)


def test_a_cycle_shows_from_when_the_live_loop_was_not_deciding() -> None:
    """b was ready at 1.0 with room on n2, but leased only at 2.0, beside c (ready at 1.9):
    the live loop made no decision between 1.0 and 1.9 (it would have leased b)."""
    log = CycleLog()
    log.leased(0.5, "a", "n1", 0.4, ONE_CPU, TWO_CPUS)
    log.leased(2.0, "b", "n2", 1.0, ONE_CPU, TWO_CPUS)
    log.leased(2.005, "c", "n3", 1.9, ONE_CPU, TWO_CPUS)
    timing = log.timing(median_latency=0.05)
    assert timing.decided == (0.4 + ROUNDING, 1.9 + ROUNDING)
    assert timing.possible == (0.4 - ROUNDING, 1.0 - ROUNDING)
