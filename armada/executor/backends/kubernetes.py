"""Real cluster: pods through the Kubernetes API (kubernetes-asyncio, raw JSON).

The backend composes its parts: the cache of its own pods, kept current by a list and a
watch and reporting each pod's state to the tracker (``kube_pod_cache``); pod creation
(``kube_launch``); node reports from informers (``kube_informer``). Here are the kill,
release and housekeeping: housekeeping settles stuck pods and deletes finished pods once
their result is delivered.

A pod stuck Terminating is force-deleted after a deadline and then reported gone, so
cancel and preempt always complete, unless its node is unreachable and ``lostNodePods``
is ``fence``: its container may still run, so the pod is left to the node's deletion or
its kubelet's return.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog
from kubernetes_asyncio import client

from armada.executor.backend import FoundRun, ObserverSlot, RunObserver, RunStatus
from armada.executor.backends.kube_calls import (
    RETRIED_STATUS,
    KubeCalls,
    KubeError,
    api_client_from,
    close_api,
)
from armada.executor.backends.kube_events import event_verdict, read_events, worth_reading
from armada.executor.backends.kube_expose import Exposures
from armada.executor.backends.kube_informer import NodeView
from armada.executor.backends.kube_launch import PodLauncher
from armada.executor.backends.kube_logs import read_pod_log
from armada.executor.backends.kube_pod_cache import PodCache
from armada.executor.backends.kube_pods import Pod, StuckDeadlines, parse_time, run_id_of, stuck_verdict
from armada.executor.backends.slices import Slices
from armada.executor.podspec import EXECUTOR_LABEL, RUN_ID_LABEL
from armada.executor.settings import IngressSettings, KubernetesSettings
from armada.executor.simulated_cordons import CORDON_REASON_ANNOTATION
from armada.model.ids import pod_name
from armada.model.leases import Lease, LogOrder, NodeReport
from armada.model.wire.logs import LogLine

__all__ = ["KubernetesBackend", "api_client_from"]

log = structlog.get_logger(__name__)

#: A pod of a run the executor does not hold is deleted once seen for this long (it was
#: created by a launch interrupted by a kill, or by an executor that lost its lease).
_ORPHAN_GRACE_SECONDS = 60.0
#: While waiting for a killed pod to go, how often to ask the API if the watch is silent.
_KILL_CHECK_SECONDS = 2.0


class KubernetesBackend:
    """A ``ClusterBackend`` for a real cluster."""

    def __init__(
        self,
        settings: KubernetesSettings,
        retention_seconds: float,
        *,
        api: client.ApiClient | None = None,
        executor_id: str = "",
        ingress: IngressSettings | None = None,
    ) -> None:
        self._settings = settings
        self._retention = retention_seconds
        self._api = api
        self._owns_api = api is None
        self._calls: KubeCalls | None = KubeCalls(api, settings) if api is not None else None
        self._deadlines = StuckDeadlines(
            unschedulable=settings.unschedulable_deadline_seconds,
            image_pull=settings.image_pull_deadline_seconds,
            pending=settings.pending_deadline_seconds,
        )
        selector = RUN_ID_LABEL + (f",{EXECUTOR_LABEL}={executor_id}" if executor_id else "")
        exposures = Exposures(ingress or IngressSettings())
        self._report = ObserverSlot()
        self._cache = PodCache(settings, selector, self._report, exposures, lambda: self._api_calls)
        self._pods = self._cache.pods
        self._launcher = PodLauncher(
            settings, executor_id, self._cache, exposures, self._report, lambda: self._api_calls
        )
        self._view: NodeView | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def _api_calls(self) -> KubeCalls:
        if self._calls is None:
            raise RuntimeError("backend not started")
        return self._calls

    @property
    def _core(self) -> client.CoreV1Api:
        return self._api_calls.core

    async def discover(self) -> list[FoundRun]:
        """Pods of this executor already in the cluster (from an earlier run of it); the list is
        retried with back-off while the API server is unavailable (restarting, throttling)."""
        if self._api is None:
            self._api = await api_client_from(self._settings)
            self._calls = KubeCalls(self._api, self._settings)
        backoff = self._api_calls.backoff()
        while True:
            try:
                return await self._cache.discover()
            except KubeError as exc:
                if exc.status not in RETRIED_STATUS and exc.status != 410:
                    raise
                delay = max(exc.retry_after or 0.0, backoff.next_delay())
                log.warning("pod discovery failed", error=str(exc), retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def start(self, observer: RunObserver) -> None:
        """Start the pod watch, node refresh and housekeeping loops."""
        self._report.attach(observer)
        self._tasks += [
            asyncio.create_task(self._cache.watch(), name="kube-watch"),
            asyncio.create_task(self._every(self._settings.housekeeping_seconds, self.housekeeping)),
        ]
        self._node_view()

    async def close(self) -> None:
        """Stop the loops; pods keep running."""
        tasks = [*self._tasks, *self._cache.failing.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._owns_api and self._api is not None:
            await close_api(self._api)

    async def nodes(self) -> list[NodeReport]:
        """Nodes as the informers last saw them (after their first list)."""
        view = self._node_view()
        await view.synced()
        return view.reports()

    async def cordoned_nodes(self) -> list[str]:
        """Nodes carrying the cordon annotation (so a restarted executor still knows them)."""
        view = self._node_view()
        await view.synced()
        return view.cordoned()

    async def cordon(self, node: str, reason: str | None) -> None:
        """``spec.unschedulable`` plus the cordon-reason annotation (upstream's), or neither."""
        body = {
            "spec": {"unschedulable": reason is not None},
            "metadata": {"annotations": {CORDON_REASON_ANNOTATION: reason}},
        }
        await self._api_calls.retried(self._api_calls.core.patch_node, node, body)

    def _node_view(self) -> NodeView:
        if self._view is None:
            settings = self._settings
            self._view = NodeView(
                self._api_calls, settings.node_not_ready_grace_seconds, settings.watch_seconds
            )
            self._tasks += self._view.tasks()
        return self._view

    # --- launch, kill and release --------------------------------------------------------
    async def launch(self, lease: Lease) -> None:
        """Create the run's pod (a bounded number at once); an existing pod of the run is kept."""
        await self._launcher.launch(lease)

    async def kill(self, run_id: str) -> None:
        """Delete the run's pod and wait until it is gone, force-deleting it after a deadline."""
        pod = self._pods.get(run_id)
        if pod is None:
            await self._report().gone(run_id)
            return
        namespace, name = pod.namespace, pod.name
        gone = self._cache.deleted.setdefault(run_id, asyncio.Event())
        grace = self._settings.pod_kill_grace_seconds
        if grace is None:
            grace = int(pod.grace or 30)
        try:
            exists = await self._api_calls.delete_pod(namespace, name, grace)
        except KubeError as exc:
            log.warning("pod delete failed", run_id=run_id, pod=name, error=str(exc))
            exists = True
        deadline = time.monotonic() + grace + self._settings.terminating_deadline_seconds
        # The watch normally reports the deletion; a broken or lagging watch is covered
        # by asking the API directly every few seconds.
        fenced = False
        while exists and not gone.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                if not self._fenced(run_id):
                    break
                if not fenced:
                    fenced = True
                    log.warning("pod on an unreachable node: fenced, not force-deleted", run_id=run_id)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(
                    min(_KILL_CHECK_SECONDS, left) if left > 0 else _KILL_CHECK_SECONDS
                ):
                    await gone.wait()
            exists = not gone.is_set() and await self._pod_of_run_exists(namespace, name, run_id)
        if exists and not gone.is_set():
            # Finalizers, or an unreachable node under lostNodePods: retry: it would stay Terminating.
            log.warning("pod stuck terminating: force-deleting", run_id=run_id, pod=name)
            with contextlib.suppress(KubeError):
                await self._api_calls.delete_pod(namespace, name, grace=0)
        if not gone.is_set():
            self._cache.forget(run_id)
            await self._report().gone(run_id)

    def _fenced(self, run_id: str) -> bool:
        """A pod stuck Terminating on an unreachable node under ``lostNodePods: fence``: its
        container may still run, so it is not force-deleted (the run would be retried beside it)."""
        pod = self._pods.get(run_id)
        if self._settings.lost_node_pods != "fence" or pod is None or self._view is None:
            return False
        node = str((pod.json().get("spec") or {}).get("nodeName") or "")
        return bool(node) and self._view.unreachable(node)

    async def _pod_of_run_exists(self, namespace: str, name: str, run_id: str) -> bool:
        try:
            pod = await self._api_calls.once(self._core.read_namespaced_pod, name, namespace)
        except KubeError as exc:
            return exc.status != 404
        return run_id_of(pod) == run_id

    async def release(self, run_id: str, discard: bool = False) -> None:
        """The result is delivered: the finished pod may go after the retention period, or
        at once when its failure category says ``action: Delete`` (``discard``), which frees
        the pod's name for the job's retry. A failed delete is left to housekeeping."""
        pod = self._pods.get(run_id)
        if pod is None:
            return
        self._cache.released[run_id] = time.monotonic()
        if (discard or self._retention <= 0) and pod.finished:
            if discard:
                log.info("deleting failed pod (category action Delete)", run_id=run_id, pod=pod.name)
            with contextlib.suppress(KubeError):
                await self._api_calls.delete_pod(pod.namespace, pod.name, grace=0)

    async def read_log(self, order: LogOrder) -> list[LogLine]:
        """pods/log of the run's pod (cached, else named as every run's pod is named)."""
        pod = self._pods.get(order.run_id)
        namespace, name = (pod.namespace, pod.name) if pod else (order.namespace, pod_name(order.job_id))
        timeout = self._settings.log_timeout_seconds
        return await read_pod_log(self._api_calls, self._core, namespace, name, order, timeout)

    # --- periodic work ----------------------------------------------------------------
    async def _every(self, seconds: float, work: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await work()
            except Exception as exc:
                log.warning("periodic kubernetes task failed", task=work.__name__, error=repr(exc))
            await asyncio.sleep(seconds)

    async def housekeeping(self) -> None:
        """Settle stuck pending pods; delete finished pods whose retention is over."""
        now, slices = time.monotonic(), Slices()
        for run_id, pod in list(self._pods.items()):
            await slices.tick()
            namespace, name = pod.namespace, pod.name
            released = self._cache.released.get(run_id)
            if released is not None and pod.finished and now - released >= self._retention:
                log.info("deleting finished pod", run_id=run_id, pod=name)
                await self._api_calls.delete_pod(namespace, name, grace=0)
            elif not self._report().holds(run_id) and released is None:
                if now - self._cache.first_seen.get(run_id, now) >= _ORPHAN_GRACE_SECONDS:
                    log.info("deleting pod of a run not held", run_id=run_id, pod=name)
                    await self._api_calls.delete_pod(namespace, name, grace=0)
            elif pod.phase == "Pending":
                full = pod.json()
                pending_for = self._pending_for(run_id, full)
                verdict = stuck_verdict(full, pending_for=pending_for, deadlines=self._deadlines)
                if verdict is None and pending_for >= self._settings.pending_events_after_seconds:
                    verdict = await self._events_verdict(full)
                if verdict is not None:
                    log.warning(
                        "stuck pod", run_id=run_id, pod=name, verdict=verdict.kind, reason=verdict.reason
                    )
                    await self._report().observe(verdict)
                    with contextlib.suppress(KubeError):
                        await self._api_calls.delete_pod(namespace, name, grace=0)

    async def _events_verdict(self, pod: Pod) -> RunStatus | None:
        if not worth_reading(pod):
            return None
        try:
            return event_verdict(pod, await read_events(self._api_calls, pod))
        except KubeError as exc:
            log.debug("pod events not read", pod=pod["metadata"].get("name"), error=str(exc))
            return None

    def _pending_for(self, run_id: str, pod: Pod) -> float:
        """How long the pod has been pending: the lesser of its age by the API server's
        ``creationTimestamp`` against the local clock and the time since this executor first
        saw it (immune to clock skew). A local clock ahead of the server's would otherwise make
        a fresh pod look old and return its lease at once; the cost is that a restarted
        executor gives a pending pod its whole deadline again."""
        seen = time.monotonic() - self._cache.first_seen.get(run_id, time.monotonic())
        created = parse_time(pod["metadata"].get("creationTimestamp"))
        if created is None:
            return seen
        return min((datetime.now(UTC) - created).total_seconds(), seen)
