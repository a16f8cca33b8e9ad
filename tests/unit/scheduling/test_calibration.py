"""Calibration of forecasts' ranges from how earlier ones came true."""

from __future__ import annotations

import numpy as np

from armada.scheduling.calibration import MIN_RATIOS, PRIOR, RANGE_QUANTILES, Calibration


def apply(calibration: Calibration, lead: float, queue: str = "") -> tuple[float, float, float]:
    expected, low, high = calibration.apply(0.0, np.array([lead]), queue)
    return float(expected[0]), float(low[0]), float(high[0])


def test_without_ratios_the_prior_factors_apply() -> None:
    assert apply(Calibration(), 1000) == (1000, *(1000 * f for f in PRIOR))


def test_the_range_covers_the_quantiles_of_the_ratios_and_the_expected_start_is_the_simulated_one() -> None:
    calibration = Calibration()
    rng = np.random.default_rng(1)
    ratios = rng.lognormal(0, 0.5, 500)
    for ratio in ratios:
        calibration.observe(1000, 1000 * ratio)
    expected, low, high = apply(calibration, 1000)
    assert expected == 1000
    inside = np.mean((ratios * 1000 >= low) & (ratios * 1000 <= high))
    low_q, high_q = RANGE_QUANTILES
    assert abs(inside - (high_q - low_q)) <= 0.02
    assert (low, high) == tuple(1000 * np.quantile(ratios, RANGE_QUANTILES))


def test_forecasts_that_came_true_late_stretch_the_range_only_above() -> None:
    calibration = Calibration()
    for ratio in np.linspace(2, 3, 100):
        calibration.observe(1000, 1000 * ratio)
    # The range always holds the expected start, the simulated one: low stays there.
    expected, low, high = apply(calibration, 1000)
    assert (expected, low) == (1000, 1000) and 2940 < high < 2960


def test_bands_of_lead_are_calibrated_apart() -> None:
    calibration = Calibration()
    for _ in range(MIN_RATIOS):
        calibration.observe(100, 100)  # short forecasts came true
        calibration.observe(10_000, 30_000)  # long ones three times as late
    assert apply(calibration, 100) == (100, 100, 100)
    assert apply(calibration, 10_000) == (10_000, 10_000, 30_000)


def test_a_queue_uses_its_own_ratios_once_it_has_enough_else_all_queues() -> None:
    calibration = Calibration()
    for _ in range(MIN_RATIOS):
        calibration.observe(1000, 3000, "overtaken")
        calibration.observe(1000, 1000, "favoured")
    calibration.observe(1000, 1000, "new")
    assert apply(calibration, 1000, "overtaken") == (1000, 1000, 3000)
    assert apply(calibration, 1000, "favoured") == (1000, 1000, 1000)
    # "new" has one ratio: all queues' band (half 1x, half 3x) decides.
    assert apply(calibration, 1000, "new") == apply(calibration, 1000) == (1000, 1000, 3000)
