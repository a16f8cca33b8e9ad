"""Upstream's per-cycle gauges of the last scheduling cycle, and its cycle outcome counter.

Read at scrape time from the last :class:`~armada.scheduler.history.CycleRecord` (its
per-queue figures are bounded by queues x pools) and the scheduling configuration; only
the leader's history has figures, so other replicas export none (as upstream's followers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.model.quantities import resolution_of
from armada.scheduler.history import CycleHistory
from armada.scheduling import SchedulingConfig
from armada.scheduling.figures import QueueFigures

_NONE = QueueFigures()

_COUNTS = (
    ("armada_scheduler_considered_jobs", "jobs_considered", "Number of jobs considered."),
    ("armada_scheduler_gangs_considered", "gangs_considered", "Number of gangs considered in this cycle."),
    ("armada_scheduler_gangs_scheduled", "gangs_scheduled", "Number of gangs scheduled in this cycle."),
    ("armada_scheduler_evicted_jobs", "evicted_jobs", "Number of jobs evicted in this cycle."),
)


class CycleFigureCollector(Collector):
    """``armada_scheduler_{considered_jobs,gangs_*,evicted_*,loop_number,...}`` and outcomes."""

    def __init__(
        self, history: CycleHistory, config: SchedulingConfig, outcomes: Callable[[], Mapping[str, int]]
    ) -> None:
        self._history, self._config, self._outcomes = history, config, outcomes

    def collect(self) -> Iterator[Metric]:
        last = self._history.last
        shares = last.shares if last else {}
        figures = last.figures if last else {}
        families = [GaugeMetricFamily(name, doc, labels=["pool", "queue"]) for name, _, doc in _COUNTS]
        resources = GaugeMetricFamily(
            "armada_scheduler_evicted_resources",
            "Resources evicted in this cycle.",
            labels=["pool", "queue", "resource"],
        )
        loops = GaugeMetricFamily(
            "armada_scheduler_loop_number",
            "Number of scheduling loops in this cycle (gangs considered in the pool).",
            labels=["pool"],
        )
        # Every queue of the cycle, as upstream (0: none considered), and any other counted.
        for pool in sorted(set(shares) | set(figures)):
            by_queue = figures.get(pool, {})
            for queue in sorted(set(shares.get(pool, {})) | set(by_queue)):
                entry = by_queue.get(queue, _NONE)
                for family, (_, attribute, _) in zip(families, _COUNTS, strict=True):
                    family.add_metric([pool, queue], getattr(entry, attribute))
                for name, units in sorted(entry.evicted.items()):
                    resources.add_metric([pool, queue, name], units * float(resolution_of(name)))
            loops.add_metric([pool], sum(entry.gangs_considered for entry in by_queue.values()))
        protected = GaugeMetricFamily(
            "armada_scheduler_protected_fraction_of_fair_share",
            "protectedFractionOfFairShare: preemptible jobs of a queue above this multiple of its "
            "fair share may be evicted.",
            labels=["pool"],
        )
        for pool in sorted(shares):
            protected.add_metric([pool], self._config.protected_fraction(pool))
        outcome = CounterMetricFamily(
            "armada_scheduler_schedule_outcome",
            "Count of scheduling cycles completed by outcome.",
            labels=["outcome"],
        )
        for name, count in self._outcomes().items():
            outcome.add_metric([name], count)
        yield from (*families, resources, loops, protected, outcome)
