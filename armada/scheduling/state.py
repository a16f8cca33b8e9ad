"""State carried from one cycle to the next: rate-limit token buckets and usage history.

Both are pure values: :func:`armada.scheduling.schedule` takes the previous
:class:`SchedulerState` and the current time and returns the next one, so the service can
persist or discard it and tests can replay cycles at any simulated time.
"""

from __future__ import annotations

import math

import msgspec


class TokenBucket(msgspec.Struct, frozen=True):
    """Tokens available at time ``updated``; a missing bucket is full."""

    tokens: float
    updated: float

    def available(self, now: float, rate: float, burst: int) -> float:
        """Tokens at ``now`` after refilling at ``rate`` per second, capped at ``burst``."""
        return min(float(burst), self.tokens + max(0.0, now - self.updated) * rate)


def tokens_now(bucket: TokenBucket | None, now: float, rate: float, burst: int) -> float:
    return float(burst) if bucket is None else bucket.available(now, rate, burst)


class UsageHistory(msgspec.Struct, frozen=True):
    """Exponentially decayed dominant share per pool and queue ("fair share over time")."""

    updated: float | None = None
    #: pool -> queue -> decayed dominant share in [0, 1]
    usage: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)
    #: pool -> queue -> dominant share held since ``updated`` (as the last cycle left it)
    held: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)

    def decayed(self, now: float, half_life: float) -> UsageHistory:
        """History at ``now``, counting the shares held since the last update.

        ``U <- U * d + held * (1 - d)`` with ``d = 2 ** (-elapsed / half_life)``: an
        exponential moving average of the share, so ``U`` is comparable with a share.
        """
        if half_life <= 0:
            return UsageHistory(updated=now)
        elapsed = 0.0 if self.updated is None else max(0.0, now - self.updated)
        decay = math.pow(2.0, -elapsed / half_life)
        usage: dict[str, dict[str, float]] = {}
        for pool in sorted(set(self.usage) | set(self.held)):
            old, held = self.usage.get(pool, {}), self.held.get(pool, {})
            values = {
                q: old.get(q, 0.0) * decay + held.get(q, 0.0) * (1 - decay) for q in sorted({*old, *held})
            }
            usage[pool] = {q: u for q, u in values.items() if u > 1e-9}
        return UsageHistory(updated=now, usage=usage, held=self.held)

    def holding(self, shares: dict[str, dict[str, float]]) -> UsageHistory:
        """The same history, now holding ``shares`` (what the cycle just decided)."""
        held = {pool: {q: s for q, s in by_queue.items() if s > 0} for pool, by_queue in shares.items()}
        return UsageHistory(updated=self.updated, usage=self.usage, held=held)

    def of(self, pool: str, queue: str) -> float:
        return self.usage.get(pool, {}).get(queue, 0.0)


class SchedulerState(msgspec.Struct, frozen=True):
    """Everything one cycle hands to the next."""

    global_bucket: TokenBucket | None = None
    queue_buckets: dict[str, TokenBucket] = msgspec.field(default_factory=dict)
    #: pool -> its ``fairsharePreemptionRateLimit`` bucket (rate-limited pools only)
    preemption_buckets: dict[str, TokenBucket] = msgspec.field(default_factory=dict)
    usage: UsageHistory = msgspec.field(default_factory=UsageHistory)
