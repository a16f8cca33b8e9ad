"""A job set's runtime as a hierarchical lognormal: the prior from its queue and shape, then
its hint, finished runs and running members (censored), against hand-computed figures."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import pytest

from armada.scheduling.runtime_model import (
    DEFAULT_SIGMA,
    HINT_SIGMA,
    WITHIN_DEFAULT,
    Evidence,
    LearnedRuntimes,
    PooledSpread,
    Prior,
    estimate_runtime,
    prior,
)
from armada.scheduling.runtimes import RuntimeEstimate

Z90 = NormalDist().inv_cdf(0.9)
PHI = NormalDist()


def _estimate(**evidence: Any) -> RuntimeEstimate:
    return estimate_runtime(Evidence(**evidence))


def test_without_censored_runs_the_estimate_is_the_normal_posterior_predictive() -> None:
    # m ~ N(ln 600, 1); three runs of 300 s at sigma_w = 0.3: precision 1 + 3 / 0.09.
    belief = Prior(math.log(600), 1.0, 0.3, "learned from 50 runs of its queue and shape")
    estimate = _estimate(hint=None, finished=[300, 300, 300], running=[], prior=belief, deadline=None)
    precision = 1 + 3 / 0.09
    mean = (math.log(600) + 3 * math.log(300) / 0.09) / precision
    spread = math.sqrt(1 / precision + 0.09)
    assert estimate.expected == pytest.approx(math.exp(mean))
    assert estimate.low == pytest.approx(math.exp(mean - Z90 * spread))
    assert estimate.high == pytest.approx(math.exp(mean + Z90 * spread))
    assert estimate.basis == "learned from 3 runs of its job set"


def test_one_censored_run_gives_the_skew_normal_posterior() -> None:
    # Prior N(c, 1) over m, sigma_w = 1, one member running for e^c seconds: the posterior is
    # proportional to phi(m - c) Phi(m - c), whose CDF is Phi(m - c)^2.
    c = math.log(1000)
    belief = Prior(c, 1.0, 1.0, "learned from 50 runs of its queue and shape")
    estimate = _estimate(hint=None, finished=[], running=[1000], prior=belief, deadline=None)
    m10, m50, m90 = (c + PHI.inv_cdf(math.sqrt(q)) for q in (0.1, 0.5, 0.9))
    assert math.log(estimate.expected) == pytest.approx(m50, abs=2e-3)
    low = m50 - Z90 * math.hypot((m50 - m10) / Z90, 1.0)
    high = m50 + Z90 * math.hypot((m90 - m50) / Z90, 1.0)
    assert math.log(estimate.low) == pytest.approx(low, abs=5e-3)
    assert math.log(estimate.high) == pytest.approx(high, abs=5e-3)
    assert estimate.basis == "learned from 50 runs of its queue and shape (1 running in its set)"


def test_siblings_running_long_raise_the_estimate() -> None:
    belief = Prior(math.log(600), 1.0, 0.3, "learned from 50 runs of its queue and shape")
    finished = [300, 320, 310]  # the set's first ends: its shortest

    def estimate(running: list[float]) -> float:
        return _estimate(hint=None, finished=finished, running=running, prior=belief, deadline=None).expected

    alone = estimate([])
    assert estimate([60, 120]) == pytest.approx(alone, rel=2e-3)  # far below: no news
    longer = [estimate([900] * n) for n in (1, 3, 6)]
    assert alone < longer[0] < longer[1] < longer[2]
    assert longer[2] > 600  # six siblings past 900 s outweigh three runs near 300 s
    found = _estimate(hint=None, finished=finished, running=[900] * 3, prior=belief, deadline=None)
    assert found.basis == "learned from 3 runs of its job set (3 still running)"


def test_finished_runs_outweigh_the_prior_as_they_accumulate() -> None:
    belief = Prior(math.log(3600), 1.0, 0.3, "learned from 50 runs of its queue and shape")
    expected = [
        _estimate(hint=None, finished=[100] * n, running=[], prior=belief, deadline=None).expected
        for n in (1, 3, 10, 30)
    ]
    assert expected == sorted(expected, reverse=True)
    precision = 1 + 30 / 0.09
    assert expected[-1] == pytest.approx(math.exp((math.log(3600) + 30 * math.log(100) / 0.09) / precision))
    assert expected[-1] == pytest.approx(100, rel=0.02)
    # By their median: one hung run of a day among nine of 100 s moves nothing.
    hung = _estimate(hint=None, finished=[100] * 9 + [86400], running=[], prior=belief, deadline=None)
    assert hung.expected == pytest.approx(expected[2])


def test_a_hint_combines_with_the_prior_and_the_runs() -> None:
    belief = Prior(math.log(3600), 1.0, 0.3, "learned from 50 runs of its queue and shape")
    hinted = _estimate(hint=600, finished=[], running=[], prior=belief, deadline=None)
    precision = 1 + 1 / HINT_SIGMA**2
    mean = (math.log(3600) + math.log(600) / HINT_SIGMA**2) / precision
    assert hinted.expected == pytest.approx(math.exp(mean))
    assert hinted.high == pytest.approx(math.exp(mean + Z90 * math.sqrt(1 / precision + 0.09)))
    assert hinted.basis == "hint"
    both = _estimate(hint=600, finished=[300] * 4, running=[], prior=belief, deadline=None)
    precision += 4 / 0.09
    mean = (math.log(3600) + math.log(600) / HINT_SIGMA**2 + 4 * math.log(300) / 0.09) / precision
    assert both.expected == pytest.approx(math.exp(mean))
    assert both.basis == "learned from 4 runs of its job set and its hint"
    one = _estimate(hint=600, finished=[300], running=[], prior=belief, deadline=None)
    assert one.basis == "hint (1 finished in its set)"  # a hint weighs more than one run


def test_the_default_is_replaced_by_any_evidence() -> None:
    fallback = prior([], None, 3600)
    assert not fallback.informative and fallback.within == WITHIN_DEFAULT
    alone = _estimate(hint=None, finished=[], running=[], prior=fallback, deadline=None)
    assert alone.expected == pytest.approx(3600) and alone.basis == "default"
    assert alone.sigma == pytest.approx(DEFAULT_SIGMA)  # the default's x0.25-x4
    hinted = _estimate(hint=300, finished=[], running=[], prior=fallback, deadline=None)
    assert hinted.expected == pytest.approx(300)
    assert hinted.sigma == pytest.approx(math.hypot(HINT_SIGMA, WITHIN_DEFAULT))


def test_active_deadline_bounds_the_estimate() -> None:
    fallback = prior([], None, 3600)
    bounded = _estimate(hint=None, finished=[], running=[], prior=fallback, deadline=600)
    assert (bounded.expected, bounded.low, bounded.high) == (600, 600, 600)
    assert bounded.basis == "default, bounded by activeDeadlineSeconds"
    short = _estimate(hint=60, finished=[], running=[], prior=fallback, deadline=600)
    assert short.basis == "hint" and short.high < 600


def test_the_prior_of_a_queue_and_shape() -> None:
    runs = [100.0] * 20 + [7 * 86400.0]  # one outlier moves the median by one place
    belief = prior(runs, 0.3, 3600)
    assert belief.log_median == pytest.approx(math.log(100))
    assert belief.basis == "learned from 21 runs of its queue and shape" and belief.informative
    assert belief.between == 0.5  # all alike: the floor
    spread = prior([60.0, 600.0, 6000.0] * 10, 0.3, 3600)
    total = math.log(6000 / 60) / (2 * Z90)
    assert spread.between == pytest.approx(math.sqrt(total**2 - 0.09))
    assert prior([100.0, 100.0], 0.3, 3600).basis == "default"  # too few runs


def test_the_within_set_spread_is_pooled_over_sets() -> None:
    pool = PooledSpread(memory=1e12, min_dof=1.5)
    pool.add([], 100)  # a set's first run: nothing to compare with
    pool.add([1.0], math.exp(0.5))  # (0.5 - 0)^2 * 1/2
    assert pool.sigma is None
    pool.add([math.exp(2)], math.exp(2))
    assert pool.sigma == pytest.approx(math.sqrt(0.125 / 2))
    pool.add([math.exp(2)], math.exp(30))  # a hung run counts WINSOR spreads at most
    assert pool.sigma == pytest.approx(math.sqrt((0.125 + 0.5 * (3 * 0.25) ** 2) / 3))


def test_learned_runtimes_feed_sets_shapes_and_the_pool() -> None:
    learned = LearnedRuntimes(default=3600)
    for i in range(12):
        learned.record(("q", f"set{i}"), "shape", 100)
        learned.record(("q", f"set{i}"), "shape", 100 * math.exp(0.2))
    assert learned.within.sigma == pytest.approx(0.2 / math.sqrt(2), rel=0.01)
    found = estimate_runtime(
        learned.evidence(hint=None, job_set=("q", "new"), shape="shape", running=[], deadline=None)
    )
    assert found.basis == "learned from 24 runs of its queue and shape"
    unknown = estimate_runtime(
        learned.evidence(hint=None, job_set=("q", "new"), shape=None, running=[], deadline=None)
    )
    assert unknown.basis == "default"
