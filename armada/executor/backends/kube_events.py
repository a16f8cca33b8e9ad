"""Pending for reasons only Events tell: a volume that cannot be mounted, an image that does
not exist.

A pod whose Secret or ConfigMap volume is missing waits in ``ContainerCreating`` with no
reason in its status, and one whose image does not exist soon shows only
``ImagePullBackOff: Back-off pulling image``; only the kubelet's Warning Events
(``FailedMount``, ``Failed``) say why. Neither fixes itself while the pod waits, so once such
an Event is seen the lease is returned at once with the Event's message, instead of after
``pendingDeadlineSeconds`` (15 minutes by default, each retry).
"""

from __future__ import annotations

import re
from typing import Any

from armada.executor.backend import RunStatus
from armada.executor.backends.kube_calls import Json, KubeCalls
from armada.executor.backends.kube_pods import Pod, run_id_of

#: A volume whose Secret or ConfigMap does not exist (``FailedMount``).
_MISSING_VOLUME = re.compile(r'\b(secret|configmap) "[^"]*" not found', re.IGNORECASE)
#: An image that does not exist or may not be pulled (``Failed``, from the image pull).
_NO_IMAGE = re.compile(
    r"not found|manifest unknown|repository does not exist|pull access denied|NotFound", re.IGNORECASE
)
#: Container waiting reasons under which Events are worth reading.
_WAITING = frozenset({"ContainerCreating", "ErrImagePull", "ImagePullBackOff", ""})


def worth_reading(pod: Pod) -> bool:
    """Pending with no container started and none waiting for a reason the status explains."""
    status = pod.get("status") or {}
    if status.get("phase", "Pending") != "Pending" or not (pod.get("spec") or {}).get("nodeName"):
        return False
    states = [(c.get("state") or {}) for c in status.get("containerStatuses") or []]
    return all(not s.get("running") and not s.get("terminated") for s in states) and all(
        str((s.get("waiting") or {}).get("reason") or "") in _WAITING for s in states
    )


def event_verdict(pod: Pod, events: list[Json]) -> RunStatus | None:
    """A returned lease when a Warning Event says the pod cannot start, else ``None``."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    for event in events:
        reason, message = str(event.get("reason") or ""), str(event.get("message") or "")
        hopeless = (reason == "FailedMount" and _MISSING_VOLUME.search(message)) or (
            reason == "Failed" and "image" in message.lower() and _NO_IMAGE.search(message)
        )
        if hopeless:
            return RunStatus(
                run_id=run_id_of(pod),
                kind="leaseReturned",
                pod_name=name,
                reason=f"{reason}: {message}",
                retryable=True,
            )
    return None


async def read_events(calls: KubeCalls, pod: Pod) -> list[Json]:
    """The Warning Events of ``pod`` (one list, selected by the API server)."""
    metadata: Any = pod.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")
    answer = await calls.retried(
        calls.core.list_namespaced_event,
        namespace,
        field_selector=f"involvedObject.name={name},involvedObject.kind=Pod,type=Warning",
    )
    items: list[Json] = answer.get("items") or []
    return items
