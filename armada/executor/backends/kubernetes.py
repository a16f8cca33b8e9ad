"""Real cluster: pods through the Kubernetes API (kubernetes-asyncio).

The backend keeps a cache of Armada pods fed by a watch that is restarted from a full
relist every ``resync_seconds`` (so a missed or broken watch heals itself), and reports
each pod's state to the tracker. Housekeeping fails or returns stuck pods and deletes
finished pods once their result is delivered and the retention period is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Literal

import structlog
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from armada.executor.backend import FoundRun, RunObserver, RunStatus
from armada.executor.backends.kube_nodes import node_reports
from armada.executor.backends.kube_pods import (
    Pod,
    StuckDeadlines,
    held_phase,
    is_finished,
    job_id_of,
    parse_time,
    phase_of,
    pod_run_status,
    run_id_of,
    stuck_verdict,
)
from armada.executor.backoff import Backoff
from armada.executor.podspec import RUN_ID_LABEL, build_pod
from armada.executor.settings import KubernetesSettings
from armada.model.leases import Lease, NodeReport, tail_text

log = structlog.get_logger(__name__)

#: Client errors that retrying the same pod cannot fix: the run fails.
_FATAL_CREATE_STATUS = frozenset({400, 403, 404, 422})
#: What a pod name already taken means: the pod of this very run, a stale pod now deleted
#: (retry), or the pod of another live run.
NameClash = Literal["ours", "cleared", "busy"]
#: A pod of a run the executor does not hold is deleted once seen for this long (it was
#: created by a launch interrupted by a kill, or by an executor that lost its lease).
_ORPHAN_GRACE_SECONDS = 60.0
#: While waiting for a killed pod to go, how often to ask the API if the watch is silent.
_KILL_CHECK_SECONDS = 2.0


async def api_client_from(settings: KubernetesSettings) -> client.ApiClient:
    """An API client from ``kubeconfig``, else in-cluster config, else ``~/.kube/config``."""
    configuration = client.Configuration()
    # Pods are read as JSON: a field the client's models think required must not break the watch.
    configuration.client_side_validation = False
    if settings.kubeconfig:
        await config.load_kube_config(
            config_file=settings.kubeconfig,
            context=settings.context or None,
            client_configuration=configuration,
        )
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            await config.load_kube_config(
                context=settings.context or None, client_configuration=configuration
            )
    return client.ApiClient(configuration)


class KubernetesBackend:
    """A ``ClusterBackend`` for a real cluster."""

    def __init__(
        self, settings: KubernetesSettings, retention_seconds: float, *, api: client.ApiClient | None = None
    ) -> None:
        self._settings = settings
        self._retention = retention_seconds
        self._api = api
        self._owns_api = api is None
        self._deadlines = StuckDeadlines(
            unschedulable=settings.unschedulable_deadline_seconds,
            image_pull=settings.image_pull_deadline_seconds,
            pending=settings.pending_deadline_seconds,
        )
        self._pods: dict[str, Pod] = {}
        self._first_seen: dict[str, float] = {}
        self._released: dict[str, float] = {}
        self._deleted: dict[str, asyncio.Event] = {}
        self._nodes: list[NodeReport] | None = None
        self._observer: RunObserver | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def _core(self) -> client.CoreV1Api:
        if self._api is None:
            raise RuntimeError("backend not started")
        return client.CoreV1Api(self._api)

    def _json(self, model: Any) -> Pod:
        assert self._api is not None
        data: Pod = self._api.sanitize_for_serialization(model)
        return data

    async def discover(self) -> list[FoundRun]:
        """Armada pods already in the cluster (from an earlier executor)."""
        if self._api is None:
            self._api = await api_client_from(self._settings)
        for pod in await self._list_armada_pods():
            self._remember(pod)
        return [
            FoundRun(run_id=run_id, job_id=job_id_of(pod), phase=held_phase(pod))
            for run_id, pod in self._pods.items()
        ]

    async def start(self, observer: RunObserver) -> None:
        """Start the pod watch, node refresh and housekeeping loops."""
        self._observer = observer
        self._tasks = [
            asyncio.create_task(self._watch_pods(), name="kube-watch"),
            asyncio.create_task(self._every(self._settings.node_refresh_seconds, self._refresh_nodes)),
            asyncio.create_task(self._every(self._settings.housekeeping_seconds, self.housekeeping)),
        ]

    async def close(self) -> None:
        """Stop the loops; pods keep running."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._owns_api and self._api is not None:
            await self._api.close()

    async def nodes(self) -> list[NodeReport]:
        """Nodes as of the last refresh (refreshed now if never)."""
        if self._nodes is None:
            await self._refresh_nodes()
        return self._nodes or []

    async def launch(self, lease: Lease) -> None:
        """Create the run's pod; an existing pod of the same run is kept."""
        body = build_pod(lease, node_id_label=self._settings.node_id_label)
        name = body["metadata"]["name"]
        for attempt in range(2):
            try:
                # The API takes the raw JSON manifest (the lease's pod spec is JSON, not a model).
                created = await self._core.create_namespaced_pod(lease.namespace, body)  # type: ignore[arg-type]
            except ApiException as exc:
                clash: NameClash | None = await self._name_clash(lease, name) if exc.status == 409 else None
                if clash == "ours":
                    return  # a retried lease: the pod of this very run exists
                if clash == "cleared" and attempt == 0:
                    continue
                await self._create_failed(lease, name, exc)
                return
            self._remember(self._json(created))
            log.info("pod created", run_id=lease.run_id, job_id=lease.job_id, pod=name, node=lease.node)
            await self._report().observe(RunStatus(run_id=lease.run_id, kind="pending", pod_name=name))
            return

    async def _name_clash(self, lease: Lease, name: str) -> NameClash:
        """``ours``, ``cleared`` (an old run's pod deleted: retry) or ``busy`` (a live run)."""
        try:
            existing = self._json(await self._core.read_namespaced_pod(name, lease.namespace))
        except ApiException:
            return "cleared"
        owner = run_id_of(existing)
        if owner == lease.run_id:
            self._remember(existing)
            return "ours"
        if self._report().holds(owner):
            return "busy"
        await self._delete(lease.namespace, name, grace=0)
        return "cleared"

    async def _create_failed(self, lease: Lease, name: str, exc: ApiException) -> None:
        message = f"pod creation failed: HTTP {exc.status}: {exc.reason}"
        fatal = exc.status in _FATAL_CREATE_STATUS
        log.warning("pod creation failed", run_id=lease.run_id, pod=name, status=exc.status, fatal=fatal)
        status = RunStatus(
            run_id=lease.run_id,
            kind="failed" if fatal else "leaseReturned",
            pod_name=name,
            reason=message,
            cause="Error" if fatal else "",
            retryable=not fatal,
        )
        await self._report().observe(status)

    async def kill(self, run_id: str) -> None:
        """Delete the run's pod and wait until the API confirms it is gone."""
        pod = self._pods.get(run_id)
        if pod is None:
            await self._report().gone(run_id)
            return
        namespace, name = pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]
        gone = self._deleted.setdefault(run_id, asyncio.Event())
        exists = await self._delete(namespace, name)
        grace = self._settings.pod_kill_grace_seconds
        if grace is None:
            grace = int(pod.get("spec", {}).get("terminationGracePeriodSeconds") or 30)
        async with asyncio.timeout(grace + 60):
            # The watch normally reports the deletion; a broken or lagging watch is covered
            # by asking the API directly every few seconds.
            while exists and not gone.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_KILL_CHECK_SECONDS):
                        await gone.wait()
                exists = gone.is_set() or await self._pod_of_run_exists(namespace, name, run_id)
        if not gone.is_set():
            self._forget(run_id)
            await self._report().gone(run_id)

    async def _pod_of_run_exists(self, namespace: str, name: str, run_id: str) -> bool:
        try:
            pod = self._json(await self._core.read_namespaced_pod(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return run_id_of(pod) == run_id

    async def release(self, run_id: str) -> None:
        """The result is delivered: the finished pod may go after the retention period."""
        pod = self._pods.get(run_id)
        if pod is None:
            return
        self._released[run_id] = time.monotonic()
        if self._retention <= 0 and is_finished(pod):
            await self._delete(pod["metadata"].get("namespace", "default"), pod["metadata"]["name"], grace=0)

    def _report(self) -> RunObserver:
        if self._observer is None:
            raise RuntimeError("backend not started")
        return self._observer

    async def _delete(self, namespace: str, name: str, grace: int | None = None) -> bool:
        """Delete a pod (``grace`` None: the kill grace setting, else the pod's own); False if absent."""
        grace = self._settings.pod_kill_grace_seconds if grace is None else grace
        try:
            if grace is None:
                await self._core.delete_namespaced_pod(name, namespace)
            else:
                await self._core.delete_namespaced_pod(name, namespace, grace_period_seconds=grace)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # --- the pod cache ------------------------------------------------------------
    def _remember(self, pod: Pod) -> str:
        run_id = run_id_of(pod)
        if run_id:
            self._pods[run_id] = pod
            self._first_seen.setdefault(run_id, time.monotonic())
        return run_id

    def _forget(self, run_id: str) -> None:
        self._pods.pop(run_id, None)
        self._first_seen.pop(run_id, None)
        self._released.pop(run_id, None)
        event = self._deleted.pop(run_id, None)
        if event is not None:
            event.set()

    async def _list_armada_pods(self) -> list[Pod]:
        return (await self._list_armada_pods_at())[0]

    async def _list_armada_pods_at(self) -> tuple[list[Pod], str | None]:
        """Armada pods and the resource version of the list (where a watch should start)."""
        listed = await self._core.list_pod_for_all_namespaces(label_selector=RUN_ID_LABEL)
        pods = [pod for pod in (self._json(item) for item in listed.items) if run_id_of(pod)]
        return pods, listed.metadata.resource_version if listed.metadata else None

    async def _watch_pods(self) -> None:
        """Relist, then watch, until the resync period ends; forever, backing off on errors."""
        backoff = Backoff(0.5, 30.0)
        while True:
            try:
                listed, version = await self._list_armada_pods_at()
                for vanished in set(self._pods) - {run_id_of(pod) for pod in listed}:
                    self._forget(vanished)
                    await self._report().gone(vanished)
                for pod in listed:
                    await self._on_pod("MODIFIED", pod)
                async with asyncio.timeout(self._settings.resync_seconds):
                    stream = watch.Watch().stream(
                        self._core.list_pod_for_all_namespaces,
                        label_selector=RUN_ID_LABEL,
                        resource_version=version,
                    )
                    async for event in stream:
                        await self._on_pod(str(event["type"]), self._json(event["object"]))
                        backoff.reset()
            except TimeoutError:
                continue
            except Exception as exc:
                delay = backoff.next_delay()
                log.warning("pod watch failed", error=repr(exc), retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def _on_pod(self, kind: str, pod: Pod) -> None:
        run_id = run_id_of(pod)
        if not run_id:
            return
        observer = self._report()
        if kind == "DELETED":
            self._forget(run_id)
            await observer.gone(run_id)
            return
        self._remember(pod)
        if not observer.holds(run_id):
            return
        status = pod_run_status(pod)
        if status.kind == "failed":
            status.log_tail = await self._log_tail(pod)
        await observer.observe(status)

    async def _log_tail(self, pod: Pod) -> str:
        metadata = pod["metadata"]
        try:
            text = await self._core.read_namespaced_pod_log(
                metadata["name"], metadata.get("namespace", "default"), tail_lines=200
            )
        except (ApiException, ValueError) as exc:
            log.debug("no pod log", pod=metadata["name"], error=repr(exc))
            return ""
        return tail_text(str(text).encode())

    # --- periodic work ----------------------------------------------------------------
    async def _every(self, seconds: float, work: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await work()
            except Exception as exc:
                log.warning("periodic kubernetes task failed", task=work.__name__, error=repr(exc))
            await asyncio.sleep(seconds)

    async def _refresh_nodes(self) -> None:
        nodes = await self._core.list_node()
        pods = await self._core.list_pod_for_all_namespaces(
            field_selector="status.phase!=Succeeded,status.phase!=Failed"
        )
        self._nodes = node_reports(
            [self._json(node) for node in nodes.items], [self._json(pod) for pod in pods.items]
        )

    async def housekeeping(self) -> None:
        """Settle stuck pending pods; delete finished pods whose retention is over."""
        now = time.monotonic()
        for run_id, pod in list(self._pods.items()):
            metadata = pod["metadata"]
            namespace, name = metadata.get("namespace", "default"), metadata["name"]
            released = self._released.get(run_id)
            if released is not None and is_finished(pod) and now - released >= self._retention:
                log.info("deleting finished pod", run_id=run_id, pod=name)
                await self._delete(namespace, name, grace=0)
            elif not self._report().holds(run_id) and released is None:
                if now - self._first_seen.get(run_id, now) >= _ORPHAN_GRACE_SECONDS:
                    log.info("deleting pod of a run not held", run_id=run_id, pod=name)
                    await self._delete(namespace, name, grace=0)
            elif phase_of(pod) == "Pending":
                verdict = stuck_verdict(
                    pod, pending_for=self._pending_for(run_id, pod), deadlines=self._deadlines
                )
                if verdict is not None:
                    log.warning(
                        "stuck pod", run_id=run_id, pod=name, verdict=verdict.kind, reason=verdict.reason
                    )
                    await self._report().observe(verdict)
                    with contextlib.suppress(ApiException):
                        await self._delete(namespace, name, grace=0)

    def _pending_for(self, run_id: str, pod: Pod) -> float:
        created = parse_time(pod["metadata"].get("creationTimestamp"))
        if created is not None:
            return (datetime.now(UTC) - created).total_seconds()
        return time.monotonic() - self._first_seen.get(run_id, time.monotonic())
