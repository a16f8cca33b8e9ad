"""Real cluster: pods through the Kubernetes API (kubernetes-asyncio, raw JSON).

The backend keeps a cache of its own pods (labelled with its executor id) fed by a
paginated list and then a watch with bookmarks, renewed from its last resource version
when the API server ends it or it fails (429, 5xx, a reset), relisted on 410 or every
``resync_seconds`` (so a missed
event heals itself). It reports each pod's state to the tracker; housekeeping settles
stuck pods and deletes finished pods once their result is delivered.

Rules that keep a run from being lost or run twice: a run is declared gone only from
evidence newer than its launch (a DELETED event, or a list *started* after its pod was
created); an ambiguous create (5xx, timeout, connection lost) is read back before the
lease is returned; a pod stuck Terminating is force-deleted after a deadline and then
reported gone, so cancel and preempt always complete, unless its node is unreachable and
``lostNodePods`` is ``fence``: its container may still run, so the pod is left to the node's
deletion or its kubelet's return.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Literal

import structlog
from kubernetes_asyncio import client
from msgspec.structs import replace

from armada.executor.backend import FoundRun, ObserverSlot, RunObserver, RunStatus
from armada.executor.backends.kube_calls import (
    RETRIED_STATUS,
    KubeCalls,
    KubeError,
    after_watch_failure,
    api_client_from,
    close_api,
)
from armada.executor.backends.kube_create import create_refused
from armada.executor.backends.kube_events import event_verdict, read_events, worth_reading
from armada.executor.backends.kube_expose import Exposures
from armada.executor.backends.kube_informer import NodeView
from armada.executor.backends.kube_logs import read_pod_log
from armada.executor.backends.kube_pods import (
    CachedPod,
    Pod,
    StuckDeadlines,
    evicted_from_lost_node,
    failed_container,
    parse_time,
    pod_run_status,
    run_id_of,
    stuck_verdict,
)
from armada.executor.backends.slices import Slices
from armada.executor.podspec import EXECUTOR_LABEL, RUN_ID_LABEL, build_pod
from armada.executor.settings import IngressSettings, KubernetesSettings
from armada.executor.simulated_cordons import CORDON_REASON_ANNOTATION
from armada.model.ids import pod_name
from armada.model.leases import Lease, LogOrder, NodeReport, tail_text
from armada.model.wire.logs import LogLine

__all__ = ["KubernetesBackend", "api_client_from"]

log = structlog.get_logger(__name__)

#: What a pod name already taken means: the pod of this very run, a stale pod now deleted
#: (retry), or the pod of another live run.
NameClash = Literal["ours", "cleared", "busy"]

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
        self._executor_id = executor_id
        self._api = api
        self._owns_api = api is None
        self._calls: KubeCalls | None = KubeCalls(api, settings) if api is not None else None
        self._deadlines = StuckDeadlines(
            unschedulable=settings.unschedulable_deadline_seconds,
            image_pull=settings.image_pull_deadline_seconds,
            pending=settings.pending_deadline_seconds,
        )
        selector = RUN_ID_LABEL + (f",{EXECUTOR_LABEL}={executor_id}" if executor_id else "")
        self._selector = selector
        self._creates = asyncio.Semaphore(settings.max_concurrent_creates)
        self._pods: dict[str, CachedPod] = {}
        self._first_seen: dict[str, float] = {}
        self._released: dict[str, float] = {}
        self._deleted: dict[str, asyncio.Event] = {}
        self._failing: dict[str, asyncio.Task[None]] = {}
        self._exposures = Exposures(ingress or IngressSettings())
        self._view: NodeView | None = None
        self._report = ObserverSlot()
        #: Resource version and start time of discover's list: the pod watch's first list.
        self._discovered: tuple[str, float] | None = None
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
                return await self._discover()
            except KubeError as exc:
                if exc.status not in RETRIED_STATUS and exc.status != 410:
                    raise
                delay = max(exc.retry_after or 0.0, backoff.next_delay())
                log.warning("pod discovery failed", error=str(exc), retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def _discover(self) -> list[FoundRun]:
        list_pods = self._core.list_pod_for_all_namespaces
        started, version, slices = time.monotonic(), "", Slices()
        async for page, page_version in self._api_calls.pages(list_pods, label_selector=self._selector):
            version = page_version
            for pod in page:
                await slices.tick()
                self._remember(pod)
        self._discovered = (version, started)
        if self._pods:
            await self._exposures.recover(self._api_calls, self._selector)
        return [
            FoundRun(run_id=run_id, job_id=pod.job_id, phase=pod.held_phase)
            for run_id, pod in self._pods.items()
        ]

    async def start(self, observer: RunObserver) -> None:
        """Start the pod watch, node refresh and housekeeping loops."""
        self._report.attach(observer)
        self._tasks += [
            asyncio.create_task(self._watch_pods(), name="kube-watch"),
            asyncio.create_task(self._every(self._settings.housekeeping_seconds, self.housekeeping)),
        ]
        self._node_view()

    async def close(self) -> None:
        """Stop the loops; pods keep running."""
        tasks = [*self._tasks, *self._failing.values()]
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

    # --- launch -------------------------------------------------------------------------
    async def launch(self, lease: Lease) -> None:
        """Create the run's pod (a bounded number at once); an existing pod of the run is kept."""
        async with self._creates:
            status = await self._create(lease)
        if status is not None:
            await self._report().observe(status)

    async def _create(self, lease: Lease) -> RunStatus | None:
        body = build_pod(lease, executor_id=self._executor_id)
        name = body["metadata"]["name"]
        backoff, cleared, last = self._api_calls.backoff(), False, None
        for _ in range(self._settings.api_attempts):
            try:
                created = await self._api_calls.once(self._core.create_namespaced_pod, lease.namespace, body)
            except KubeError as exc:
                last = exc
                if exc.status == 409:
                    clash = await self._name_clash(lease, name)
                    if clash == "ours":  # a retried lease, or our earlier attempt did land
                        return await self._exposed(lease)
                    if clash == "cleared" and not cleared:
                        cleared = True
                        continue
                    return RunStatus(
                        run_id=lease.run_id, kind="leaseReturned", pod_name=name, retryable=True,
                        reason=f"pod {name} of another run still exists",
                    )  # fmt: skip
                if exc.status not in (0, 429) and exc.status < 500:
                    log.warning("pod creation refused", run_id=lease.run_id, pod=name, error=str(exc))
                    return create_refused(lease.run_id, name, exc)
                delay = exc.retry_after if exc.retry_after is not None else backoff.next_delay()
                log.info("pod creation retried", run_id=lease.run_id, pod=name, error=str(exc))
                await asyncio.sleep(delay)
                continue
            self._remember(created)
            log.info("pod created", run_id=lease.run_id, job_id=lease.job_id, pod=name, node=lease.node)
            return await self._exposed(lease, created)
        # Out of attempts: the create may still have landed (5xx or no answer): read it back.
        if last is not None and last.ambiguous and await self._name_clash(lease, name, clear=False) == "ours":
            return await self._exposed(lease)
        return RunStatus(
            run_id=lease.run_id, kind="leaseReturned", pod_name=name, retryable=True,
            reason=f"pod creation failed: {last}",
        )  # fmt: skip

    async def _exposed(self, lease: Lease, pod: Pod | None = None) -> RunStatus | None:
        """``pending`` once the run's Services and Ingresses exist. A name taken by an object not
        of this run ends the run (reported first), then its pod is deleted; the object stays."""
        name = pod_name(lease.job_id)
        taken = await self._exposures.create(self._api_calls, lease, pod)
        if taken is None:
            return RunStatus(run_id=lease.run_id, kind="pending", pod_name=name)
        await self._report().observe(taken.status(lease.run_id, name))
        with contextlib.suppress(KubeError):
            await self._delete(lease.namespace, name, grace=0)
        return None

    async def _name_clash(self, lease: Lease, name: str, *, clear: bool = True) -> NameClash:
        """``ours``, ``cleared`` (an old run's pod deleted, or none: retry) or ``busy`` (a live run)."""
        try:
            existing = await self._api_calls.retried(self._core.read_namespaced_pod, name, lease.namespace)
        except KubeError:
            return "cleared"
        owner = run_id_of(existing)
        if owner == lease.run_id:
            self._remember(existing)
            return "ours"
        if self._report().holds(owner) or not clear:
            return "busy"
        try:
            await self._delete(lease.namespace, name, grace=0)
        except KubeError:
            return "busy"
        return "cleared"

    # --- kill and release ---------------------------------------------------------------
    async def kill(self, run_id: str) -> None:
        """Delete the run's pod and wait until it is gone, force-deleting it after a deadline."""
        pod = self._pods.get(run_id)
        if pod is None:
            await self._report().gone(run_id)
            return
        namespace, name = pod.namespace, pod.name
        gone = self._deleted.setdefault(run_id, asyncio.Event())
        grace = self._settings.pod_kill_grace_seconds
        if grace is None:
            grace = int(pod.grace or 30)
        try:
            exists = await self._delete(namespace, name, grace)
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
                await self._delete(namespace, name, grace=0)
        if not gone.is_set():
            self._forget(run_id)
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
        self._released[run_id] = time.monotonic()
        if (discard or self._retention <= 0) and pod.finished:
            if discard:
                log.info("deleting failed pod (category action Delete)", run_id=run_id, pod=pod.name)
            with contextlib.suppress(KubeError):
                await self._delete(pod.namespace, pod.name, grace=0)

    async def read_log(self, order: LogOrder) -> list[LogLine]:
        """pods/log of the run's pod (cached, else named as every run's pod is named)."""
        pod = self._pods.get(order.run_id)
        namespace, name = (pod.namespace, pod.name) if pod else (order.namespace, pod_name(order.job_id))
        timeout = self._settings.log_timeout_seconds
        return await read_pod_log(self._api_calls, self._core, namespace, name, order, timeout)

    async def _delete(self, namespace: str, name: str, grace: int | None = None) -> bool:
        """Delete a pod (``grace`` None: the kill grace setting, else the pod's own); False if absent."""
        grace = self._settings.pod_kill_grace_seconds if grace is None else grace
        extra = {} if grace is None else {"grace_period_seconds": grace}
        try:
            await self._api_calls.retried(self._core.delete_namespaced_pod, name, namespace, **extra)
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # --- the pod cache ------------------------------------------------------------
    def _remember(self, pod: Pod) -> str:
        run_id = run_id_of(pod)
        if run_id:
            self._pods[run_id] = CachedPod.of(pod)
            self._first_seen.setdefault(run_id, time.monotonic())
        return run_id

    def _forget(self, run_id: str) -> None:
        self._pods.pop(run_id, None)
        self._first_seen.pop(run_id, None)
        self._released.pop(run_id, None)
        self._exposures.forget(run_id)
        event = self._deleted.pop(run_id, None)
        if event is not None:
            event.set()

    async def _watch_pods(self) -> None:
        """List, then watch (renewed from the last version) until a relist is due; for ever."""
        backoff = self._api_calls.backoff()
        version, listed_at = self._discovered or ("", 0.0)
        # discover's list is this watch's first: no second full list of a big cluster.
        cached = bool(version)
        while True:
            try:
                if cached:
                    cached = False
                    await self._report_cached()
                if not version or time.monotonic() - listed_at >= self._settings.resync_seconds:
                    version = await self._relist()
                    listed_at = time.monotonic()
                seconds = min(self._settings.watch_seconds, self._settings.resync_seconds)
                events = self._api_calls.watch(
                    self._core.list_pod_for_all_namespaces, version, seconds, label_selector=self._selector
                )
                async for event in events:
                    version = str((event.object.get("metadata") or {}).get("resourceVersion") or version)
                    if event.type != "BOOKMARK":
                        await self._on_pod(event.type, event.object)
                    backoff.reset()
            except Exception as exc:
                version, delay = after_watch_failure(exc, version, backoff)
                log.warning("pod watch failed", error=repr(exc), retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def _relist(self) -> str:
        """A full list, page by page: runs missing from it *and launched before it started*
        are gone. Returns the list's resource version."""
        started = time.monotonic()
        present: set[str] = set()
        version = ""
        list_pods = self._core.list_pod_for_all_namespaces
        slices = Slices()
        async for page, page_version in self._api_calls.pages(list_pods, label_selector=self._selector):
            version = page_version
            for pod in page:
                await slices.tick()  # a page is hundreds of pods: let heartbeats run
                present.add(run_id_of(pod))
                await self._on_pod("MODIFIED", pod)
        for run_id in [r for r in self._pods if r not in present]:
            if self._first_seen.get(run_id, started) < started:
                await self._vanished(run_id)
        return version

    async def _report_cached(self) -> None:
        """Report every held pod as discover's list found it (what a first relist reports)."""
        observer, slices = self._report(), Slices()
        for run_id, pod in list(self._pods.items()):
            await slices.tick()
            if observer.holds(run_id):
                await self._observe(pod.json())

    async def _vanished(self, run_id: str) -> None:
        failing = self._failing.get(run_id)
        if failing is not None:
            await asyncio.wait([failing])  # its terminal event first
        self._forget(run_id)
        await self._report().gone(run_id)

    async def _on_pod(self, kind: str, pod: Pod) -> None:
        run_id = run_id_of(pod)
        if not run_id:
            return
        observer = self._report()
        if kind == "DELETED":
            # The final state first: a pod deleted by someone else ends with its cause.
            if observer.holds(run_id) and run_id not in self._deleted:
                await self._observe(pod)
            await self._vanished(run_id)
            return
        self._remember(pod)
        if observer.holds(run_id):
            await self._observe(pod)

    async def _observe(self, pod: Pod) -> None:
        status = pod_run_status(pod)
        if self._settings.lost_node_pods == "retry" and evicted_from_lost_node(pod):
            reason = (
                "evicted from an unreachable node (lostNodePods: retry; its container may still run there)"
            )
            status = replace(status, kind="leaseReturned", reason=reason, run_attempted=True, retryable=True)
        if status.kind != "failed":
            await self._report().observe(status)
            info = self._exposures.info(pod, status)
            if info is not None:  # the tracker keeps the first
                await self._report().observe(info)
        elif status.run_id not in self._failing:
            # The log read is slow and may hang: it must not hold up the watch.
            task = asyncio.create_task(self._report_failure(pod, status))
            self._failing[status.run_id] = task

    async def _report_failure(self, pod: Pod, status: RunStatus) -> None:
        try:
            status.log_tail = await self._log_tail(pod)
            await self._report().observe(status)
        finally:
            self._failing.pop(status.run_id, None)

    async def _log_tail(self, pod: Pod) -> str:
        metadata = pod["metadata"]
        try:
            async with asyncio.timeout(self._settings.log_timeout_seconds):
                text = await self._api_calls.text(
                    self._core.read_namespaced_pod_log,
                    metadata["name"],
                    metadata.get("namespace", "default"),
                    container=failed_container(pod),
                    tail_lines=200,
                )
        except (KubeError, TimeoutError) as exc:
            log.debug("no pod log", pod=metadata["name"], error=repr(exc))
            return ""
        return tail_text(text.encode())

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
            released = self._released.get(run_id)
            if released is not None and pod.finished and now - released >= self._retention:
                log.info("deleting finished pod", run_id=run_id, pod=name)
                await self._delete(namespace, name, grace=0)
            elif not self._report().holds(run_id) and released is None:
                if now - self._first_seen.get(run_id, now) >= _ORPHAN_GRACE_SECONDS:
                    log.info("deleting pod of a run not held", run_id=run_id, pod=name)
                    await self._delete(namespace, name, grace=0)
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
                        await self._delete(namespace, name, grace=0)

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
        seen = time.monotonic() - self._first_seen.get(run_id, time.monotonic())
        created = parse_time(pod["metadata"].get("creationTimestamp"))
        if created is None:
            return seen
        return min((datetime.now(UTC) - created).total_seconds(), seen)
