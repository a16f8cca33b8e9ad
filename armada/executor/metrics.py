"""An executor's own metrics: leases received, held runs by phase, failed calls to the server.

Counting happens in a client subclass, so the agent's loop is unchanged; phases are read
from the run tracker at scrape time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.client.errors import ArmadaClientError
from armada.client.executor_api import ExecutorApiClient
from armada.executor.tracker import RunTracker
from armada.model.leases import LeaseRequest, LeaseResponse, RunEventBatch
from armada.model.lifecycle import RunPhase


class ExecutorMetrics(Collector):
    """Counters plus an ``armada_executor_pods`` gauge over the trackers being watched."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.leases = Counter(
            "armada_executor_leases_received", "Runs leased to this executor.", ["cluster"], registry=registry
        )
        self.failures = Counter(
            "armada_executor_report_failures",
            "Failed calls to the server (lease = heartbeat and node report, events = run events).",
            ["cluster", "call"],
            registry=registry,
        )
        self._trackers: dict[str, RunTracker] = {}
        registry.register(self)

    def watch(self, cluster: str, tracker: RunTracker) -> None:
        self._trackers[cluster] = tracker

    def collect(self) -> Iterator[Metric]:
        pods = GaugeMetricFamily("armada_executor_pods", "Runs held by phase.", labels=["cluster", "phase"])
        for cluster, tracker in sorted(self._trackers.items()):
            for phase in get_args(RunPhase):
                pods.add_metric([cluster, phase], tracker.count(phase))
        yield pods


class MeteredExecutorApiClient(ExecutorApiClient):
    """The executor API client, counting leases and failed calls."""

    def __init__(
        self,
        base_url: str,
        *,
        metrics: ExecutorMetrics,
        cluster: str,
        token: str = "",
        ca_cert: str = "",
        timeout: float = 30.0,
    ) -> None:
        super().__init__(base_url, token=token, ca_cert=ca_cert, timeout=timeout)
        self._metrics = metrics
        self._cluster = cluster

    async def lease(self, request: LeaseRequest) -> LeaseResponse:
        try:
            response = await super().lease(request)
        except ArmadaClientError:
            self._metrics.failures.labels(self._cluster, "lease").inc()
            raise
        self._metrics.leases.labels(self._cluster).inc(len(response.leases))
        return response

    async def report_events(self, batch: RunEventBatch) -> None:
        try:
            await super().report_events(batch)
        except ArmadaClientError:
            self._metrics.failures.labels(self._cluster, "events").inc()
            raise
