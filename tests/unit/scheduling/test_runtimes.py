"""Runtime estimates: the history's bounded windows, and the lognormal an estimate describes
(its mean, a draw, and what is left of a running job)."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from armada.scheduling.runtimes import RuntimeEstimate, RuntimeHistory


def test_history_keeps_a_bounded_window_and_key_count() -> None:
    history = RuntimeHistory(window=3, max_keys=2)
    for seconds in (1.0, 2.0, 3.0, 10.0):
        history.record("a", seconds)
    assert list(history.runs("a")) == [2.0, 3.0, 10.0]
    history.record("b", 5.0)
    history.record("c", 6.0)  # "a" was fed least recently: dropped
    assert list(history.runs("a")) == [] and list(history.runs("c")) == [6.0]


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


def test_a_draw_is_a_quantile_of_what_is_left() -> None:
    estimate = RuntimeEstimate(100, 100 / math.e, 100 * math.e, "learned")
    assert estimate.draw(0.5) == pytest.approx(100)
    assert estimate.draw(0.9) == pytest.approx(100 * math.e)
    # Run as long as its median: quantile u of what is left is quantile 0.5 + u / 2 in all.
    p75 = 100 * math.exp(estimate.sigma * NormalDist().inv_cdf(0.75))
    assert 100 + estimate.draw(0.5, 100) == pytest.approx(p75)
    assert estimate.draw(0.5, 100) == pytest.approx(estimate.remaining(100).expected)
    assert RuntimeEstimate(100, 100, 100, "hint").draw(0.9, 40) == 60  # exact: no spread to draw from
