"""Creating the Services and Ingresses that expose a run's pod, and reading their addresses.

They are created right after the pod (they name it as their owner, so the pod's uid must
exist) and never deleted by the executor: Kubernetes' garbage collector removes them with
the pod. Their names all start with the job's ``armada-<jobId>-0-``. A name already taken is
used only if the object is this run's own by its job and run labels (a retried create that
did land); anything else, even an earlier run's object not yet collected, is never deleted
or replaced (the executor may delete Services anywhere): the run ends with the reason (an
earlier run's leftover returns the lease, anything else fails the run) and its pod is
deleted. A refused object is logged and left out: the run goes on, and its ``ingressInfo``
event lists the addresses that exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from msgspec.structs import replace

from armada.executor.backend import RunStatus
from armada.executor.backends.kube_calls import Json, KubeCalls, KubeError
from armada.executor.exposure import (
    ingress_addresses,
    ingress_manifests,
    node_port_addresses,
    service_manifest,
    service_plans,
)
from armada.executor.podspec import JOB_ID_LABEL, RUN_ID_LABEL
from armada.executor.settings import IngressSettings
from armada.model.ids import pod_name
from armada.model.leases import Lease

log = structlog.get_logger(__name__)

Call = Callable[..., Awaitable[Any]]


class NameTaken(Exception):
    """A name the run needs is held by an object not created for this run (left alone)."""

    def __init__(self, detail: str, *, leftover: bool) -> None:
        super().__init__(detail)
        #: The object is an earlier run's of the same job (the garbage collector will take it).
        self.leftover = leftover

    def status(self, run_id: str, pod: str) -> RunStatus:
        """The run's end: a leftover returns the lease (it goes soon), anything else fails it."""
        reason = str(self)
        if self.leftover:
            return RunStatus(run_id=run_id, kind="leaseReturned", pod_name=pod, reason=reason, retryable=True)
        return RunStatus(run_id=run_id, kind="failed", pod_name=pod, reason=reason, cause="Error")


@dataclass
class Exposure:
    """What was created for one run: its NodePort Services and its Ingress hosts."""

    services: list[Json] = field(default_factory=list)
    hosts: dict[int, str] = field(default_factory=dict)

    def addresses(self, host_ip: str) -> dict[int, str]:
        """Container port → address, given the IP of the pod's node."""
        found: dict[int, str] = {}
        for service in self.services:
            found |= node_port_addresses(service, host_ip)
        return found | self.hosts


class Exposures:
    """What exposes each run's ports (runs launched by this executor process that expose any)."""

    def __init__(self, settings: IngressSettings) -> None:
        self._settings = settings
        self._by_run: dict[str, Exposure] = {}

    async def create(self, calls: KubeCalls, lease: Lease, pod: Json | None = None) -> NameTaken | None:
        """Create the run's Services and Ingresses (``pod``: as created; else read back); a
        name taken by an object not of this run is returned (and that object left alone)."""
        if not lease.services and not lease.ingress:
            return None
        name = pod_name(lease.job_id)
        try:
            if pod is None:
                pod = await calls.retried(calls.core.read_namespaced_pod, name, lease.namespace)
        except KubeError as exc:
            log.warning("pod to expose not found", run_id=lease.run_id, pod=name, error=str(exc))
            return None
        try:
            exposure = await expose(calls, lease, pod, self._settings)
        except NameTaken as taken:
            log.warning("name taken", run_id=lease.run_id, reason=str(taken))
            return taken
        if exposure is not None:
            self._by_run[lease.run_id] = exposure
        return None

    async def recover(self, calls: KubeCalls, selector: str) -> None:
        """After a restart: what exposes the runs already in the cluster, read back from the
        objects' run labels (two paginated lists), so their ``ingressInfo`` can be said again."""
        try:
            services = calls.pages(calls.core.list_service_for_all_namespaces, label_selector=selector)
            async for page, _ in services:
                for service in page:
                    self._exposure_of(service).services.append(service)
            ingresses = calls.pages(calls.networking.list_ingress_for_all_namespaces, label_selector=selector)
            async for page, _ in ingresses:
                for ingress in page:
                    self._exposure_of(ingress).hosts |= ingress_addresses(ingress)
        except KubeError as exc:  # e.g. an older ClusterRole: only the addresses are lost
            log.warning("services and ingresses of adopted runs not read", error=str(exc))

    def _exposure_of(self, obj: Json) -> Exposure:
        run_id = str(((obj.get("metadata") or {}).get("labels") or {}).get(RUN_ID_LABEL, ""))
        return self._by_run.setdefault(run_id, Exposure())

    def info(self, pod: Json, status: RunStatus) -> RunStatus | None:
        """The ``ingressInfo`` of a pod whose status is ``running`` (None: nothing exposed)."""
        exposure = self._by_run.get(status.run_id)
        if status.kind != "running" or exposure is None:
            return None
        pod_status = pod.get("status") or {}
        addresses = exposure.addresses(str(pod_status.get("hostIP") or status.node))
        if not addresses:
            return None
        pod_ip = str(pod_status.get("podIP") or "")
        return replace(status, kind="ingressInfo", pod_ip=pod_ip, ingress_addresses=addresses)

    def forget(self, run_id: str) -> None:
        self._by_run.pop(run_id, None)


async def expose(calls: KubeCalls, lease: Lease, pod: Json, settings: IngressSettings) -> Exposure | None:
    """Create the Services and Ingresses of ``lease`` for its created ``pod``; ``None`` if it
    exposes nothing. Raises :class:`NameTaken`."""
    plans = service_plans(lease)
    if not plans:
        return None
    service_calls = (calls.core.create_namespaced_service, calls.core.read_namespaced_service)
    ingress_calls = (calls.networking.create_namespaced_ingress, calls.networking.read_namespaced_ingress)
    exposure = Exposure()
    for plan in plans:
        service = await _create_owned(calls, service_calls, service_manifest(plan, pod))
        if service is not None:
            exposure.services.append(service)
        for manifest in ingress_manifests(plan, pod, settings):
            ingress = await _create_owned(calls, ingress_calls, manifest)
            if ingress is not None:
                exposure.hosts |= ingress_addresses(ingress)
    return exposure


async def _create_owned(calls: KubeCalls, api: tuple[Call, Call], body: Json) -> Json | None:
    """Create ``body``; a same-named object is taken if it is this run's (by its job and run
    labels), never deleted; any other raises :class:`NameTaken`. ``None``: refused, left out."""
    create, read = api
    metadata = body["metadata"]
    name, namespace, kind = metadata["name"], metadata["namespace"], body["kind"]
    job, run = metadata["labels"].get(JOB_ID_LABEL), metadata["labels"].get(RUN_ID_LABEL)
    for _ in range(2):
        try:
            created: Json = await calls.retried(create, namespace, body)
            log.info("created", kind=kind, name=name, run_id=run)
            return created
        except KubeError as exc:
            if exc.status != 409:
                log.warning("refused", kind=kind, name=name, run_id=run, error=str(exc))
                return None
        try:
            existing = await calls.retried(read, name, namespace)
        except KubeError as exc:
            if exc.status == 404:
                continue  # deleted meanwhile: create it again
            log.warning("name taken, owner unknown", kind=kind, name=name, run_id=run, error=str(exc))
            return None
        labels = (existing.get("metadata") or {}).get("labels") or {}
        if run and labels.get(JOB_ID_LABEL) == job and labels.get(RUN_ID_LABEL) == run:
            return existing  # ours: a retried create that did land
        where = f"{kind} {namespace}/{name} already exists and was not created for this run"
        if labels.get(JOB_ID_LABEL) == job and labels.get(RUN_ID_LABEL):
            detail = f"{where} (run {labels[RUN_ID_LABEL]} of this job left it; not yet garbage-collected)"
            raise NameTaken(detail, leftover=True)
        raise NameTaken(f"{where}: it is left alone and the run cannot expose its ports", leftover=False)
    return None
