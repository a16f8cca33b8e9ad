"""Retention's figures: jobs pruned, fleet history compacted, the oldest job kept, database size."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.services.retention import Pruner


class RetentionCollector(Collector):
    """Read at scrape time from the pruner's last round (no query per scrape)."""

    def __init__(self, pruner: Pruner, clock: Callable[[], float]) -> None:
        self._pruner = pruner
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        pruner = self._pruner
        yield CounterMetricFamily(
            "armada_retention_pruned_jobs",
            "Expired jobs this process pruned (their events and view rows deleted).",
            value=pruner.pruned_jobs,
        )
        yield CounterMetricFamily(
            "armada_retention_compacted_fleet_events",
            "Executor heartbeats and node reports older than retention.expireAfter that this "
            "process removed from the log (what the views need of them is kept).",
            value=pruner.compacted_fleet_events,
        )
        oldest = pruner.oldest_retained
        yield GaugeMetricFamily(
            "armada_retention_oldest_retained_seconds",
            "Age of the oldest finished job still kept, at the last look (0: none kept); "
            "above retention.expireAfter plus its interval, pruning is behind.",
            value=max(0.0, self._clock() - oldest.timestamp()) if oldest is not None else 0.0,
        )
        yield GaugeMetricFamily(
            "armada_database_size_bytes",
            "Bytes the database takes (PostgreSQL: the database; SQLite: the file), at the last look.",
            value=pruner.database_bytes,
        )
