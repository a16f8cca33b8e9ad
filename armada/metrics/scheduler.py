"""Scheduler metrics: shares of the last cycle (gauges) and per-cycle decisions (counters)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.scheduler.history import CycleHistory, CycleRecord

_SHARES = (
    (
        "armada_scheduler_fair_share",
        "fair_share",
        "Queue's fair share of the pool (weight over active weights).",
    ),
    (
        "armada_scheduler_adjusted_fair_share",
        "adjusted_fair_share",
        "Fair share after giving what queues do not demand to those that do.",
    ),
    ("armada_scheduler_actual_share", "actual_share", "Dominant share of the pool the queue holds."),
    ("armada_scheduler_demand", "demand", "Dominant share the queue would hold if everything it asks ran."),
    ("armada_scheduler_queue_weight", "weight", "Queue's weight in the pool (its priority factor)."),
    (
        "armada_scheduler_short_job_penalty",
        "short_job_penalty",
        "Short job penalty: dominant share of resources of jobs that ended soon after they started.",
    ),
    # No weight multipliers here: the weight before them is the same figure.
    ("armada_scheduler_raw_queue_weight", "weight", "Queue's weight before multipliers (the same here)."),
)

#: Upstream's millisecond buckets for cycle times: 10 ms x 1.1^i.
MS_BUCKETS = tuple(round(10 * 1.1**i, 3) for i in range(110))


class ShareCollector(Collector):
    """Share gauges of every queue and pool in the last recorded cycle."""

    def __init__(self, history: CycleHistory) -> None:
        self._history = history

    def collect(self) -> Iterator[Metric]:
        last = self._history.last
        for name, attribute, doc in _SHARES:
            family = GaugeMetricFamily(name, doc, labels=["pool", "queue"])
            for pool, shares in (last.shares if last else {}).items():
                for queue, share in shares.items():
                    family.add_metric([pool, queue], getattr(share, attribute))
            yield family
        error = GaugeMetricFamily(
            "armada_scheduler_fairness_error",
            "Sum over queues below their adjusted fair share of how far below they are, last cycle.",
            labels=["pool"],
        )
        for pool, shares in (last.shares if last else {}).items():
            below = (max(0.0, share.adjusted_fair_share - share.actual_share) for share in shares.values())
            error.add_metric([pool], sum(below))
        yield error


class CycleCounters:
    """Listener of :class:`CycleHistory`: counts decisions and times cycles."""

    def __init__(self, registry: CollectorRegistry) -> None:
        # Upstream's labels; ``type`` is how the job was scheduled (``no-preemption``,
        # ``urgency``, ``fairshare``: the preemption that made room) or preempted.
        labels = ["pool", "queue", "priority_class", "type"]
        self.scheduled = Counter(
            "armada_scheduler_scheduled_jobs", "Jobs the scheduler leased.", labels, registry=registry
        )
        self.preempted = Counter(
            "armada_scheduler_preempted_jobs", "Jobs the scheduler preempted.", labels, registry=registry
        )
        self.cycle = Histogram(
            "armada_scheduler_cycle_seconds",
            "Time the scheduling core spent per cycle.",
            registry=registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )

        # Upstream's cycle time histograms: milliseconds, its buckets. The core's time is both
        # upstream's whole cycle and its scheduling part (the rest of a cycle here is the append).
        self.cycle_ms = [
            Histogram(name, doc, registry=registry, buckets=MS_BUCKETS)
            for name, doc in (
                ("armada_scheduler_schedule_cycle_times", "Milliseconds the scheduling core took per cycle."),
                ("armada_scheduler_scheduling_cycle_times", "Milliseconds to schedule on all pools."),
            )
        ]
        self.pool_ms = Histogram(
            "armada_scheduler_pool_scheduling_cycle_times",
            "Milliseconds to schedule on a given pool.",
            ["pool"],
            registry=registry,
            buckets=MS_BUCKETS,
        )

    def __call__(self, record: CycleRecord) -> None:
        self.cycle.observe(record.stats.duration)
        for histogram in self.cycle_ms:
            histogram.observe(record.stats.duration * 1000)
        for pool, seconds in record.pool_seconds.items():
            self.pool_ms.labels(pool).observe(seconds * 1000)
        for counter, counts in ((self.scheduled, record.scheduled), (self.preempted, record.preempted)):
            for (queue, pool, priority_class, kind), count in counts.items():
                counter.labels(pool, queue, priority_class, kind).inc(count)
