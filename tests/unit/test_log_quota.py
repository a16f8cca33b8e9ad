"""Log-read quotas: waiting reads per key, and a per-caller rate (token bucket)."""

from __future__ import annotations

import pytest

from armada.model.errors import LimitExceeded
from armada.services.log_quota import InFlight, Rate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_gets_its_burst_then_its_rate() -> None:
    clock = Clock()
    rate = Rate(2.0, 3, "scheduler.logReadsPerSecondPerCaller", clock)
    for _ in range(3):
        rate.take("alice", "alice")
    with pytest.raises(LimitExceeded, match="faster than 2 a second") as refused:
        rate.take("alice", "alice")
    assert refused.value.retry_after == 1
    rate.take("bob", "bob")  # every caller has its own bucket
    clock.now += 0.5  # one more read's worth
    rate.take("alice", "alice")
    with pytest.raises(LimitExceeded):
        rate.take("alice", "alice")
    clock.now += 60  # refilled up to the burst, no further
    for _ in range(3):
        rate.take("alice", "alice")
    with pytest.raises(LimitExceeded):
        rate.take("alice", "alice")


def test_full_buckets_are_dropped_once_there_are_too_many(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    rate = Rate(1.0, 2, "setting", clock)
    monkeypatch.setattr(Rate, "MAX_KEYS", 3)
    for key in ("a", "b", "c"):
        rate.take(key, key)
    clock.now += 10  # all full again: as good as unknown
    rate.take("d", "d")
    assert set(rate._buckets) == {"d"}


def test_waiting_slots_are_given_back_however_the_read_ends() -> None:
    waiting = InFlight(1, "scheduler.maxLogReadsPerCaller")
    with pytest.raises(RuntimeError), waiting.hold("alice", "alice"):
        with (
            pytest.raises(LimitExceeded, match="already has 1 log reads waiting"),
            waiting.hold("alice", "alice"),
        ):
            pass
        raise RuntimeError
    with waiting.hold("alice", "alice"):
        pass
