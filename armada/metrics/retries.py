"""Retry engine counters, observed from the events the log follower applies.

Counting from the log (not at the decision) means every replica's ``/metrics`` agrees and
a decision is counted once, however often its transaction was retried.
"""

from __future__ import annotations

from typing import ClassVar

from prometheus_client import CollectorRegistry, Counter

from armada.model import events as ev
from armada.scheduler.cluster_state import ClusterState


class RetryCounters:
    """Follower listener for ``armada_scheduler_retry_policy_decisions_total`` and
    ``armada_scheduler_retries_total``."""

    events: ClassVar[tuple[type[ev.Event], ...]] = (ev.JobQueued, ev.JobFailed)

    def __init__(self, registry: CollectorRegistry) -> None:
        self.decisions = Counter(
            "armada_scheduler_retry_policy_decisions",
            "Failures a retry policy decided, by policy and decision (retry or fail).",
            ["policy", "decision"],
            registry=registry,
        )
        self.retries = Counter(
            "armada_scheduler_retries",
            "Retries the retry engine granted, by queue and failure category.",
            ["queue", "category"],
            registry=registry,
        )

    def __call__(self, state: ClusterState, event: ev.Event) -> None:
        if isinstance(event, ev.JobQueued) and event.retry_policy:
            self.decisions.labels(event.retry_policy, "retry").inc()
            self.retries.labels(event.queue, event.failure_category or "uncategorised").inc()
        elif isinstance(event, ev.JobFailed) and event.retry_policy:
            self.decisions.labels(event.retry_policy, "fail").inc()
