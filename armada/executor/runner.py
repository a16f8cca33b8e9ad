"""Running an executor: in its own process (``armada executor``) or inside another loop."""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Sequence

import msgspec
import structlog
from prometheus_client import CollectorRegistry

from armada.executor.agent import ExecutorAgent
from armada.executor.backend import ClusterBackend
from armada.executor.backends import make_backend
from armada.executor.metrics import ExecutorMetrics, MeteredExecutorApiClient
from armada.executor.settings import ExecutorSettings, check_cluster_id

log = structlog.get_logger(__name__)


async def run_executor(
    settings: ExecutorSettings,
    *,
    backend: ClusterBackend | None = None,
    handle_signals: bool = False,
    metrics: ExecutorMetrics | None = None,
) -> None:
    """Serve one cluster until cancelled (or, with ``handle_signals``, SIGTERM/SIGINT).

    Either way the shutdown is graceful: buffered events are flushed for up to
    ``shutdown_flush_seconds`` and runs are left running unless
    ``kill_runs_on_shutdown``. ``armada serve --dev`` runs this as a task in its own loop.
    Leases, failed calls and held runs are counted in ``metrics`` (when given, to be served).
    """
    check_cluster_id(settings.cluster_id)
    backend = backend or make_backend(settings)
    metrics = metrics or ExecutorMetrics(CollectorRegistry())
    async with MeteredExecutorApiClient(
        settings.server_url,
        metrics=metrics,
        cluster=settings.cluster_id,
        token=settings.token,
        ca_cert=settings.ca_cert,
        timeout=settings.request_timeout_seconds,
    ) as client:
        # In its own process, what start-up loads (the pod and node caches of a big cluster)
        # lives for ever too: frozen once loaded, full collections never walk it.
        agent = ExecutorAgent(settings, backend, client, on_synced=gc.freeze if handle_signals else None)
        metrics.watch(settings.cluster_id, agent.tracker)
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
        for signum in signals:
            loop.add_signal_handler(signum, agent.stop)
        log.info(
            "executor starting",
            executor_id=settings.cluster_id,
            pool=settings.pool,
            backend=settings.backend,
            server=settings.server_url,
        )
        if handle_signals:
            # Its own process: everything alive now (modules, clients) lives for ever, so it
            # is moved out of the garbage collector's way; full collections then walk only
            # what the executor creates, keeping event-loop stalls short on big clusters.
            gc.freeze()
        try:
            await agent.run()
        finally:
            for signum in signals:
                loop.remove_signal_handler(signum)


def fleet_settings(settings: ExecutorSettings, clusters: int) -> list[ExecutorSettings]:
    """``clusters`` copies of ``settings`` for one process, cluster ids ``<id>-0`` ... ``<id>-<n-1>``
    (just ``settings`` for one)."""
    if clusters == 1:
        return [settings]
    return [
        msgspec.structs.replace(settings, cluster_id=f"{settings.cluster_id}-{i}") for i in range(clusters)
    ]


async def run_executors(
    fleet: Sequence[ExecutorSettings], *, handle_signals: bool = False, metrics: ExecutorMetrics | None = None
) -> None:
    """Serve several clusters from one event loop, as :func:`run_executor` serves one; SIGTERM
    or SIGINT (with ``handle_signals``) shuts each down gracefully.

    A fake fleet of tens of clusters then costs one interpreter, not tens, so a benchmark on
    a small machine measures the server rather than the executors' processes.
    """
    if len(fleet) == 1:
        await run_executor(fleet[0], handle_signals=handle_signals, metrics=metrics)
        return
    metrics = metrics or ExecutorMetrics(CollectorRegistry())
    tasks = [asyncio.create_task(run_executor(each, metrics=metrics)) for each in fleet]
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
    for signum in signals:
        loop.add_signal_handler(signum, lambda: [task.cancel() for task in tasks])
    if handle_signals:
        gc.freeze()  # as run_executor does in its own process
    try:
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result
