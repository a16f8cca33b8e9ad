"""The server's metrics: one registry per application, fed by listeners and read-only collectors."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.metrics_core import Metric

from armada.eventstore.store import EventStore
from armada.metrics.appends import AppendCollector
from armada.metrics.cluster import ClusterCollector
from armada.metrics.cycles import CycleFigureCollector
from armada.metrics.http import HttpMetrics
from armada.metrics.jobs import JobTimings
from armada.metrics.loop_lag import LoopLag
from armada.metrics.nodes import NodeCollector
from armada.metrics.records import UnreadableRecordsCollector
from armada.metrics.retention import RetentionCollector
from armada.metrics.retries import RetryCounters
from armada.metrics.scheduler import CycleCounters, ShareCollector
from armada.metrics.states import JobStateMetrics
from armada.model.events import Event
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.loop import SchedulerService
from armada.services.retention import Pruner


class ServerMetrics:
    """Everything ``GET /metrics`` exposes. Created with the app; ``attach`` once services run."""

    def __init__(self) -> None:
        #: Not the global registry: several apps (tests) may live in one process.
        # Collectors without describe() still answer a request for their series (?name[]=).
        self.registry = CollectorRegistry(support_collectors_without_names=True)
        self.http = HttpMetrics(self.registry)
        #: Started with the server's background services.
        self.loop_lag = LoopLag(self.registry)
        self._appended = Counter(
            "armada_events_appended", "Events appended to the log.", ["type"], registry=self.registry
        )

    def attach(self, store: EventStore, follower: EventLogFollower, scheduler: SchedulerService) -> None:
        store.listeners.append(self._count_appended)
        follower.listen(JobTimings(self.registry))
        follower.listen(RetryCounters(self.registry))
        follower.listen(JobStateMetrics(self.registry))
        scheduler.history.listeners.append(CycleCounters(self.registry))
        self.registry.register(ClusterCollector(lambda: follower.state))
        self.registry.register(NodeCollector(lambda: follower.state))
        self.registry.register(ShareCollector(scheduler.history))
        self.registry.register(
            CycleFigureCollector(scheduler.history, scheduler.config, lambda: scheduler.outcomes)
        )
        self.registry.register(UnreadableRecordsCollector(store.unreadable))
        self.registry.register(AppendCollector(store))

    def attach_retention(self, pruner: Pruner) -> None:
        self.registry.register(RetentionCollector(pruner, pruner.clock))

    def _count_appended(self, events: Sequence[Event]) -> None:
        # One increment per type and append (a group's append holds thousands of events).
        for kind, count in collections.Counter(event.type for event in events).items():
            self._appended.labels(kind).inc(count)

    async def exposition(self, names: Sequence[str] = ()) -> bytes:
        """The text exposition; with ``names`` (Prometheus's ``name[]``) only those series.

        Collected on the event loop, where the collectors may read the live state; formatted
        in a worker thread: the series of tens of thousands of nodes take seconds to format,
        which would otherwise stall every lease call and stream for as long.
        """
        registry = self.registry.restricted_registry(names) if names else self.registry
        return await asyncio.to_thread(generate_latest, _Collected(list(registry.collect())))


class _Collected(CollectorRegistry):
    """Metric families already collected (snapshots), to be formatted in another thread."""

    def __init__(self, families: list[Metric]) -> None:
        super().__init__(auto_describe=False)
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families
