"""Creating a run's pod (and its Services and Ingresses) so that a run never exists twice.

A create is retried on 429, 5xx and no answer; an ambiguous one (5xx, timeout, connection
lost) is read back before the lease is returned. A name already taken is the pod of this
very run (kept), a stale pod of an old run (deleted, then created again), or the pod of a
live run (the lease is returned). A refusal is the job's fault or the cluster's
(``kube_create``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Literal

import structlog

from armada.executor.backend import ObserverSlot, RunStatus
from armada.executor.backends.kube_calls import KubeCalls, KubeError
from armada.executor.backends.kube_create import create_refused
from armada.executor.backends.kube_expose import Exposures
from armada.executor.backends.kube_pod_cache import PodCache
from armada.executor.backends.kube_pods import Pod, run_id_of
from armada.executor.podspec import build_pod
from armada.executor.settings import KubernetesSettings
from armada.model.ids import pod_name
from armada.model.leases import Lease

log = structlog.get_logger(__name__)

#: What a pod name already taken means: the pod of this very run, a stale pod now deleted
#: (retry), or the pod of another live run.
NameClash = Literal["ours", "cleared", "busy"]


class PodLauncher:
    """Creates runs' pods, a bounded number at once."""

    def __init__(
        self,
        settings: KubernetesSettings,
        executor_id: str,
        cache: PodCache,
        exposures: Exposures,
        report: ObserverSlot,
        calls: Callable[[], KubeCalls],
    ) -> None:
        self._settings = settings
        self._executor_id = executor_id
        self._cache = cache
        self._exposures = exposures
        self._report = report
        self._calls = calls
        self._creates = asyncio.Semaphore(settings.max_concurrent_creates)

    async def launch(self, lease: Lease) -> None:
        """Create the run's pod; an existing pod of the run is kept."""
        async with self._creates:
            status = await self._create(lease)
        if status is not None:
            await self._report().observe(status)

    async def _create(self, lease: Lease) -> RunStatus | None:
        calls = self._calls()
        body = build_pod(lease, executor_id=self._executor_id)
        name = body["metadata"]["name"]
        backoff, cleared, last = calls.backoff(), False, None
        for _ in range(self._settings.api_attempts):
            try:
                created = await calls.once(calls.core.create_namespaced_pod, lease.namespace, body)
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
            self._cache.remember(created)
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
        taken = await self._exposures.create(self._calls(), lease, pod)
        if taken is None:
            return RunStatus(run_id=lease.run_id, kind="pending", pod_name=name)
        await self._report().observe(taken.status(lease.run_id, name))
        with contextlib.suppress(KubeError):
            await self._calls().delete_pod(lease.namespace, name, grace=0)
        return None

    async def _name_clash(self, lease: Lease, name: str, *, clear: bool = True) -> NameClash:
        """``ours``, ``cleared`` (an old run's pod deleted, or none: retry) or ``busy`` (a live run)."""
        calls = self._calls()
        try:
            existing = await calls.retried(calls.core.read_namespaced_pod, name, lease.namespace)
        except KubeError:
            return "cleared"
        owner = run_id_of(existing)
        if owner == lease.run_id:
            self._cache.remember(existing)
            return "ours"
        if self._report().holds(owner) or not clear:
            return "busy"
        try:
            await calls.delete_pod(lease.namespace, name, grace=0)
        except KubeError:
            return "busy"
        return "cleared"
