"""Runtime estimates: the order of the bases, learned quantiles, the deadline bound, and the
lognormal they describe (its mean, and what is left of a running job)."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from armada.scheduling.runtimes import RuntimeEstimate, RuntimeHistory, Sample, choose_estimate


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


def test_a_spread_estimate_is_a_lognormal_whose_mean_exceeds_its_median() -> None:
    # low and high are its 10th and 90th percentiles: sigma = ln(e^2) / (2 z90) = 1 / z90.
    estimate = RuntimeEstimate(100, 100 / math.e, 100 * math.e, "learned")
    assert estimate.sigma == pytest.approx(1 / NormalDist().inv_cdf(0.9))
    assert estimate.mean() == pytest.approx(100 * math.exp(estimate.sigma**2 / 2))
    exact = RuntimeEstimate(100, 100, 100, "hint")
    assert (exact.sigma, exact.mean(), exact.mean(40)) == (0.0, 100, 60)
    # Capped by a deadline at its high value: the mean is never past it.
    assert RuntimeEstimate(590, 150, 600, "default").mean() == 600


def test_time_left_grows_with_the_time_run_past_the_median() -> None:
    estimate = RuntimeEstimate(100, 100 / math.e, 100 * math.e, "learned")
    assert estimate.remaining(0) == estimate
    lefts = [estimate.remaining(elapsed) for elapsed in (100, 200, 400)]
    assert lefts[0].expected < lefts[1].expected < lefts[2].expected
    assert all(left.low < left.expected < left.high for left in lefts)
    assert all("re-estimated after running longer" in left.basis for left in lefts)
    # Given it ran as long as its median, half of what is left is above the median's
    # median: P(T > 100 + left) = P(T > 100) / 2 = 1/4, so 100 + left is the 75th percentile.
    p75 = 100 * math.exp(estimate.sigma * NormalDist().inv_cdf(0.75))
    assert 100 + lefts[0].expected == pytest.approx(p75)
    # The mean left, too, grows with the time run (heavy tails), and exceeds the median left.
    means = [estimate.mean(elapsed) for elapsed in (100, 200, 400)]
    assert means == sorted(means) and means[0] > lefts[0].expected
