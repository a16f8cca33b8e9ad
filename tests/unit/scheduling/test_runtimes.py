"""Runtime estimates: the order of the bases, learned quantiles and the deadline bound."""

from __future__ import annotations

from armada.scheduling.runtimes import RuntimeHistory, Sample, choose_estimate


def test_history_quantiles_shrug_off_an_outlier() -> None:
    history = RuntimeHistory(window=64)
    for seconds in [100.0] * 20 + [7 * 86400.0]:
        history.record(("set", "s1"), seconds)
    sample = history.sample(("set", "s1"))
    assert sample is not None and sample.count == 21 and sample.p50 == 100.0
    assert history.sample(("set", "other")) is None


def test_history_keeps_a_bounded_window_and_key_count() -> None:
    history = RuntimeHistory(window=3, max_keys=2)
    for seconds in (1.0, 2.0, 3.0, 10.0):
        history.record("a", seconds)
    history.record("b", 5.0)
    history.record("c", 6.0)  # "a" was fed least recently: dropped
    assert history.sample("a") is None
    sample = history.sample("c")
    assert sample is not None and sample.count == 1


def test_bases_in_order_hint_job_set_shape_default() -> None:
    job_set, shape = Sample(10, 50, 60, 90), Sample(200, 10, 20, 30)
    assert choose_estimate(hint=30, job_set=job_set, shape=shape, deadline=None, default=3600).basis == "hint"
    learned = choose_estimate(hint=None, job_set=job_set, shape=shape, deadline=None, default=3600)
    assert (learned.low, learned.expected, learned.high) == (50, 60, 90)
    assert learned.basis == "learned from 10 runs of its job set"
    few = Sample(2, 1, 1, 1)
    by_shape = choose_estimate(hint=None, job_set=few, shape=shape, deadline=None, default=3600)
    assert by_shape.basis == "learned from 200 runs of its queue and shape" and by_shape.expected == 20
    fallback = choose_estimate(hint=None, job_set=None, shape=None, deadline=None, default=3600)
    assert (fallback.expected, fallback.basis) == (3600, "default")


def test_active_deadline_bounds_every_basis() -> None:
    bounded = choose_estimate(hint=None, job_set=None, shape=None, deadline=600, default=3600)
    assert (bounded.expected, bounded.high) == (600, 600)
    assert bounded.low == 600
    assert bounded.basis == "default, bounded by activeDeadlineSeconds"
    short = choose_estimate(hint=60, job_set=None, shape=None, deadline=600, default=3600)
    assert short.basis == "hint" and short.high == 90
