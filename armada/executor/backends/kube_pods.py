"""What a pod's JSON says about its run: its event, and whether it is stuck.

Pure functions over pod JSON (camelCase, as the API serves it), so that the mapping of
phases and container statuses is tested without a cluster.

Since Kubernetes 1.27 the kubelet gives a *deleted* pod a terminal phase from its
containers' exit codes, and drains, kube-scheduler preemption, taint eviction and PodGC
mark the pod with a ``DisruptionTarget`` condition but no pod reason. So a terminal phase
says nothing about the job when the pod was disrupted or deleted by someone else (exit
143 on SIGTERM is not the job's failure, exit 0 is not its success): such a run is a
returned lease, retryable. The executor's own kills never get here (the tracker reports
nothing about a run being killed). Kubelet admission refusals (``UnexpectedAdmissionError``
for devices, ``OutOfcpu``…) ran nothing: a returned lease, not an attempt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec
from msgspec.structs import replace

from armada.executor.backend import RunStatus
from armada.executor.podspec import JOB_ID_LABEL, RUN_ID_LABEL
from armada.model.leases import FailureCause
from armada.model.lifecycle import RunPhase

Pod = dict[str, Any]

#: Waiting reasons that will not fix themselves: fail the run at once.
FATAL_WAITING = re.compile(r"^(InvalidImageName|ErrImageNeverPull|CreateContainerConfigError)$")
#: Waiting reasons of an image still being pulled (or backing off).
IMAGE_PULL_WAITING = re.compile(r"^(ErrImagePull|ImagePullBackOff)$")
#: Pod reasons of a kubelet that refused to admit the pod: no container ever started.
KUBELET_REFUSALS = re.compile(
    r"^(UnexpectedAdmissionError|OutOf\S+|NodeAffinity|NodeName|NodeSelectorMismatching|InvalidNodeInfo"
    r"|TopologyAffinityError|PodOSNotSupported|SysctlForbidden|AppArmor|ContainerRuntimeNotReady)$"
)


_STATUS_KEYS = ("phase", "reason", "message", "conditions", "hostIP", "podIP")


def slim(pod: Pod) -> Pod:
    """Only what the executor reads of one of its pods.

    A real pod's JSON is hundreds of objects (``managedFields``, volumes, env…); a cache of
    100,000 of them makes every full garbage collection stall the event loop for seconds.
    """
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    kept_status = {key: status[key] for key in _STATUS_KEYS if key in status}
    for key in ("initContainerStatuses", "containerStatuses"):
        if status.get(key):
            kept_status[key] = [{"name": c.get("name"), "state": c.get("state")} for c in status[key]]
    return {
        "metadata": {
            key: metadata[key]
            for key in (
                "name",
                "namespace",
                "labels",
                "creationTimestamp",
                "deletionTimestamp",
                "resourceVersion",
            )
            if key in metadata
        },
        "spec": {
            "nodeName": spec.get("nodeName"),
            "terminationGracePeriodSeconds": spec.get("terminationGracePeriodSeconds"),
            "containers": [{"name": c.get("name")} for c in spec.get("containers") or []],
        },
        "status": kept_status,
    }


_encode = msgspec.json.encode
_decode = msgspec.json.Decoder(dict[str, Any]).decode


class CachedPod(msgspec.Struct, frozen=True, gc=False):
    """One of the executor's pods as its cache keeps it.

    ``gc=False`` and only strings, numbers and bytes inside: a cache of 100,000 pods holds
    no object the garbage collector tracks, so full collections stay short (as nested
    dicts, they stalled the event loop for over a second). The slim pod JSON is kept
    encoded, for the few checks that need more than these fields.
    """

    namespace: str
    name: str
    job_id: str
    phase: str
    deleting: bool
    grace: int | None
    raw: bytes

    @classmethod
    def of(cls, pod: Pod) -> CachedPod:
        kept = slim(pod)
        metadata = kept["metadata"]
        return cls(
            namespace=str(metadata.get("namespace") or "default"),
            name=str(metadata.get("name") or ""),
            job_id=job_id_of(kept),
            phase=phase_of(kept),
            deleting=bool(metadata.get("deletionTimestamp")),
            grace=kept["spec"].get("terminationGracePeriodSeconds"),
            raw=_encode(kept),
        )

    def json(self) -> Pod:
        """The slim pod JSON."""
        return _decode(self.raw)

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def held_phase(self) -> RunPhase:
        """The run phase to report for the pod when found at start-up."""
        if self.deleting:
            return "terminating"
        return "pending" if self.phase == "Pending" else "running"


def run_id_of(pod: Pod) -> str:
    """The Armada run id label of a pod ('' if it is not an Armada pod)."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(RUN_ID_LABEL, ""))


def job_id_of(pod: Pod) -> str:
    """The Armada job id label of a pod."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(JOB_ID_LABEL, ""))


def phase_of(pod: Pod) -> str:
    """The pod's phase (``Pending`` when not reported yet)."""
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_finished(pod: Pod) -> bool:
    """Whether the pod has ended (its containers will not run again)."""
    return phase_of(pod) in ("Succeeded", "Failed")


def held_phase(pod: Pod) -> RunPhase:
    """The run phase to report for a pod found at start-up."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "terminating"
    return "pending" if phase_of(pod) == "Pending" else "running"


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp from the API (None if absent)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _container_statuses(pod: Pod) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _terminated(pod: Pod) -> dict[str, Any] | None:
    """The termination that explains the pod's end: the first non-zero one, else any."""
    ends = [
        s["state"]["terminated"] for s in _container_statuses(pod) if (s.get("state") or {}).get("terminated")
    ]
    failed = [end for end in ends if end.get("exitCode", 0) != 0]
    chosen: dict[str, Any] | None = (failed or ends or [None])[0]
    return chosen


def failed_container(pod: Pod) -> str:
    """The container whose end explains the pod's failure (its log is the one to show)."""
    statuses = _container_statuses(pod)
    for status in statuses:
        if ((status.get("state") or {}).get("terminated") or {}).get("exitCode", 0) != 0:
            return str(status.get("name") or "")
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0].get("name") or "") if containers else ""


def _cause(pod_reason: str, container_reason: str) -> FailureCause:
    if container_reason == "OOMKilled":
        return "OOM"
    if pod_reason == "DeadlineExceeded":
        return "DeadlineExceeded"
    if pod_reason in ("Evicted", "Preempting", "Terminated", "Shutdown", "NodeShutdown"):
        return "Evicted"
    return "Error"


def disruption(pod: Pod) -> str:
    """Why the pod was disrupted or deleted by someone else ('' if it was not)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            detail = condition.get("message") or condition.get("reason") or ""
            return f"pod disrupted: {detail}".rstrip(": ")
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "pod deleted by someone other than the executor"
    return ""


#: ``DisruptionTarget`` reason of the taint manager's eviction from an unreachable or
#: not-ready node (the ``NoExecute`` taint's ``tolerationSeconds`` ran out).
TAINT_EVICTION = "DeletionByTaintManager"


def evicted_from_lost_node(pod: Pod) -> bool:
    """Evicted from an unreachable node and not known to have stopped: the pod stays
    Terminating with phase Running until the node comes back or is deleted, and its
    container may still be running there (the node may only be cut off from the API)."""
    if is_finished(pod):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "DisruptionTarget" and c.get("reason") == TAINT_EVICTION for c in conditions)


def _started(pod: Pod) -> bool:
    return any(
        (s.get("state") or {}).get("running") or (s.get("state") or {}).get("terminated")
        for s in _container_statuses(pod)
    )


def pod_run_status(pod: Pod) -> RunStatus:
    """The run event a pod's current state amounts to (the tracker drops repeats)."""
    status = pod.get("status") or {}
    base = RunStatus(
        run_id=run_id_of(pod),
        kind="pending",
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        pod_name=str((pod.get("metadata") or {}).get("name") or ""),
    )
    phase = phase_of(pod)
    if phase == "Running":
        return replace(base, kind="running", run_attempted=True)
    disrupted = disruption(pod) if phase in ("Succeeded", "Failed") else ""
    if disrupted:
        return replace(base, kind="leaseReturned", reason=disrupted, run_attempted=True, retryable=True)
    if phase == "Failed" and not _started(pod) and KUBELET_REFUSALS.match(str(status.get("reason") or "")):
        refusal = f"{status.get('reason')}: {status.get('message') or ''}".rstrip(": ")
        return replace(
            base, kind="leaseReturned", reason=f"kubelet refused the pod: {refusal}", retryable=True
        )
    if phase == "Succeeded":
        return replace(base, kind="succeeded", exit_code=0, run_attempted=True)
    if phase != "Failed":
        return base
    pod_reason = str(status.get("reason") or "")
    end = _terminated(pod) or {}
    if end.get("reason") == "ContainerStatusUnknown":
        # Exit 137 made up by a kubelet back from a restart or a partition: the job's own
        # end is unknown, so it is not the job's failure.
        detail = f"container status unknown (node lost or kubelet restarted): {end.get('message') or ''}"
        return replace(
            base, kind="leaseReturned", reason=detail.rstrip(": "), run_attempted=True, retryable=True
        )
    container_reason = str(end.get("reason") or "")
    cause = _cause(pod_reason, container_reason)
    message = str(status.get("message") or end.get("message") or "")
    reason = " ".join(part for part in (pod_reason or container_reason, message) if part)
    return replace(
        base,
        kind="failed",
        exit_code=end.get("exitCode"),
        reason=reason or "pod failed",
        cause=cause,
        run_attempted=True,
        retryable=cause == "Evicted",
        termination_message=str(end.get("message") or ""),
    )


@dataclass(frozen=True)
class StuckDeadlines:
    """How long a pending pod may wait for each kind of progress (seconds)."""

    unschedulable: float
    image_pull: float
    pending: float


def stuck_verdict(pod: Pod, *, pending_for: float, deadlines: StuckDeadlines) -> RunStatus | None:
    """A terminal status for a pod that is stuck pending, or None while it may still start.

    Hopeless container states fail the run; a pod that waits too long to be scheduled,
    to pull its image or for anything else has its lease returned for another try.
    """
    if phase_of(pod) != "Pending":
        return None
    name = str((pod.get("metadata") or {}).get("name") or "")
    base = RunStatus(run_id=run_id_of(pod), kind="leaseReturned", pod_name=name, retryable=True)
    for container in _container_statuses(pod):
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        detail = f"{reason}: {waiting.get('message') or ''}".rstrip(": ")
        if FATAL_WAITING.match(reason):
            return replace(base, kind="failed", reason=detail, cause="Error", retryable=False)
        if IMAGE_PULL_WAITING.match(reason) and pending_for >= deadlines.image_pull:
            return replace(base, reason=detail)
    for condition in (pod.get("status") or {}).get("conditions") or []:
        unschedulable = condition.get("type") == "PodScheduled" and condition.get("status") == "False"
        if unschedulable and pending_for >= deadlines.unschedulable:
            reason = f"unschedulable: {condition.get('message') or condition.get('reason') or ''}".rstrip(
                ": "
            )
            return replace(base, reason=reason)
    if pending_for >= deadlines.pending:
        return replace(base, reason="pod pending too long")
    return None
