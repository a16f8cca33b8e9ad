"""Fair-share arithmetic, token buckets and usage history."""

from __future__ import annotations

import numpy as np
import pytest

from armada.scheduling import TokenBucket, UsageHistory
from armada.scheduling.fairshare import dominant_shares, drf_scale, water_fill


def test_water_fill_caps_demand_and_reshares() -> None:
    shares = water_fill(np.array([1.0, 1.0, 2.0]), np.array([0.1, 1.0, 1.0]))
    assert shares.tolist() == pytest.approx([0.1, 0.3, 0.6])
    assert water_fill(np.array([1.0, 1.0]), np.array([0.2, 0.3])).tolist() == pytest.approx([0.2, 0.3])
    assert water_fill(np.array([1.0, 1.0]), np.array([0.0, 0.5])).tolist() == pytest.approx([0.0, 0.5])


def test_dominant_share_only_counts_configured_resources() -> None:
    scale = drf_scale(np.array([100, 1000, 8]), ["cpu", "memory", "custom"], {"cpu": 1.0, "memory": 1.0})
    assert dominant_shares(np.array([[50, 100, 8], [10, 900, 0]]), scale).tolist() == pytest.approx(
        [0.5, 0.9]
    )


def test_token_bucket_refills_up_to_burst() -> None:
    bucket = TokenBucket(tokens=1.0, updated=10.0)
    assert bucket.available(11.5, rate=2.0, burst=100) == pytest.approx(4.0)
    assert bucket.available(1000.0, rate=2.0, burst=100) == 100.0
    assert bucket.available(5.0, rate=2.0, burst=100) == 1.0


def test_usage_history_is_an_exponential_average_of_held_shares() -> None:
    history = UsageHistory().decayed(0.0, half_life=10).holding({"p": {"a": 1.0}})
    history = history.decayed(10.0, half_life=10)
    assert history.of("p", "a") == pytest.approx(0.5)
    history = history.holding({"p": {"b": 1.0}}).decayed(20.0, half_life=10)
    assert history.of("p", "a") == pytest.approx(0.25)
    assert history.of("p", "b") == pytest.approx(0.5)
    assert UsageHistory().decayed(5.0, half_life=0).usage == {}
