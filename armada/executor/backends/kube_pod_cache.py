"""This executor's pods as the API server last showed them, and each change reported.

The cache (pods labelled with the executor's id) is fed by a paginated list and then a
watch with bookmarks, renewed from its last resource version when the API server ends it
or it fails (429, 5xx, a reset), relisted on 410 or every ``resync_seconds`` (so a missed
event heals itself). A run is declared gone only from evidence newer than its launch: a
DELETED event, or a list *started* after its pod was first seen, so a fresh pod missing
from a slow list is not reported gone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog
from msgspec.structs import replace

from armada.executor.backend import FoundRun, ObserverSlot, RunStatus
from armada.executor.backends.kube_calls import KubeCalls, KubeError, after_watch_failure
from armada.executor.backends.kube_expose import Exposures
from armada.executor.backends.kube_pods import (
    CachedPod,
    Pod,
    evicted_from_lost_node,
    failed_container,
    pod_run_status,
    run_id_of,
)
from armada.executor.backends.slices import Slices
from armada.executor.settings import KubernetesSettings
from armada.model.leases import tail_text

log = structlog.get_logger(__name__)


class PodCache:
    """Pods by run id, with when each was first seen, released and awaited deleted."""

    def __init__(
        self,
        settings: KubernetesSettings,
        selector: str,
        report: ObserverSlot,
        exposures: Exposures,
        calls: Callable[[], KubeCalls],
    ) -> None:
        self._settings = settings
        self._selector = selector
        self._report = report
        self._exposures = exposures
        self._calls = calls
        self.pods: dict[str, CachedPod] = {}
        self.first_seen: dict[str, float] = {}
        self.released: dict[str, float] = {}
        #: Set when the run's pod is gone (a kill waits on it).
        self.deleted: dict[str, asyncio.Event] = {}
        #: Failure reports still reading their pod's log.
        self.failing: dict[str, asyncio.Task[None]] = {}
        #: Resource version and start time of discover's list: the pod watch's first list.
        self._discovered: tuple[str, float] | None = None

    def remember(self, pod: Pod) -> str:
        run_id = run_id_of(pod)
        if run_id:
            self.pods[run_id] = CachedPod.of(pod)
            self.first_seen.setdefault(run_id, time.monotonic())
        return run_id

    def forget(self, run_id: str) -> None:
        self.pods.pop(run_id, None)
        self.first_seen.pop(run_id, None)
        self.released.pop(run_id, None)
        self._exposures.forget(run_id)
        event = self.deleted.pop(run_id, None)
        if event is not None:
            event.set()

    async def discover(self) -> list[FoundRun]:
        """The first list: pods left by an earlier run of this executor."""
        calls = self._calls()
        started, version, slices = time.monotonic(), "", Slices()
        async for page, page_version in calls.pages(
            calls.core.list_pod_for_all_namespaces, label_selector=self._selector
        ):
            version = page_version
            for pod in page:
                await slices.tick()
                self.remember(pod)
        self._discovered = (version, started)
        if self.pods:
            await self._exposures.recover(calls, self._selector)
        return [
            FoundRun(run_id=run_id, job_id=pod.job_id, phase=pod.held_phase)
            for run_id, pod in self.pods.items()
        ]

    async def watch(self) -> None:
        """List, then watch (renewed from the last version) until a relist is due; for ever."""
        calls = self._calls()
        backoff = calls.backoff()
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
                events = calls.watch(
                    calls.core.list_pod_for_all_namespaces, version, seconds, label_selector=self._selector
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
        calls = self._calls()
        started = time.monotonic()
        present: set[str] = set()
        version = ""
        slices = Slices()
        async for page, page_version in calls.pages(
            calls.core.list_pod_for_all_namespaces, label_selector=self._selector
        ):
            version = page_version
            for pod in page:
                await slices.tick()  # a page is hundreds of pods: let heartbeats run
                present.add(run_id_of(pod))
                await self._on_pod("MODIFIED", pod)
        for run_id in [r for r in self.pods if r not in present]:
            if self.first_seen.get(run_id, started) < started:
                await self.vanished(run_id)
        return version

    async def _report_cached(self) -> None:
        """Report every held pod as discover's list found it (what a first relist reports)."""
        observer, slices = self._report(), Slices()
        for run_id, pod in list(self.pods.items()):
            await slices.tick()
            if observer.holds(run_id):
                await self._observe(pod.json())

    async def vanished(self, run_id: str) -> None:
        failing = self.failing.get(run_id)
        if failing is not None:
            await asyncio.wait([failing])  # its terminal event first
        self.forget(run_id)
        await self._report().gone(run_id)

    async def _on_pod(self, kind: str, pod: Pod) -> None:
        run_id = run_id_of(pod)
        if not run_id:
            return
        observer = self._report()
        if kind == "DELETED":
            # The final state first: a pod deleted by someone else ends with its cause.
            if observer.holds(run_id) and run_id not in self.deleted:
                await self._observe(pod)
            await self.vanished(run_id)
            return
        self.remember(pod)
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
        elif status.run_id not in self.failing:
            # The log read is slow and may hang: it must not hold up the watch.
            task = asyncio.create_task(self._report_failure(pod, status))
            self.failing[status.run_id] = task

    async def _report_failure(self, pod: Pod, status: RunStatus) -> None:
        try:
            status.log_tail = await self._log_tail(pod)
            await self._report().observe(status)
        finally:
            self.failing.pop(status.run_id, None)

    async def _log_tail(self, pod: Pod) -> str:
        metadata = pod["metadata"]
        calls = self._calls()
        try:
            async with asyncio.timeout(self._settings.log_timeout_seconds):
                text = await calls.text(
                    calls.core.read_namespaced_pod_log,
                    metadata["name"],
                    metadata.get("namespace", "default"),
                    container=failed_container(pod),
                    tail_lines=200,
                )
        except (KubeError, TimeoutError) as exc:
            log.debug("no pod log", pod=metadata["name"], error=repr(exc))
            return ""
        return tail_text(text.encode())
