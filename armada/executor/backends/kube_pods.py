"""What a pod's JSON says about its run: its event, and whether it is stuck.

Pure functions over pod JSON (camelCase, as the API serves it), so that the mapping of
phases and container statuses is tested without a cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from msgspec.structs import replace

from armada.executor.backend import RunStatus
from armada.executor.podspec import JOB_ID_LABEL, RUN_ID_LABEL
from armada.model.leases import FailureCause, RunPhase

Pod = dict[str, Any]

#: Waiting reasons that will not fix themselves: fail the run at once.
FATAL_WAITING = re.compile(r"^(InvalidImageName|ErrImageNeverPull|CreateContainerConfigError)$")
#: Waiting reasons of an image still being pulled (or backing off).
IMAGE_PULL_WAITING = re.compile(r"^(ErrImagePull|ImagePullBackOff)$")


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


def _cause(pod_reason: str, container_reason: str) -> FailureCause:
    if container_reason == "OOMKilled":
        return "OOM"
    if pod_reason == "DeadlineExceeded":
        return "DeadlineExceeded"
    if pod_reason in ("Evicted", "Preempting", "Terminated", "Shutdown", "NodeShutdown"):
        return "Evicted"
    return "Error"


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
    if phase == "Succeeded":
        return replace(base, kind="succeeded", exit_code=0, run_attempted=True)
    if phase != "Failed":
        return base
    pod_reason = str(status.get("reason") or "")
    end = _terminated(pod) or {}
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
