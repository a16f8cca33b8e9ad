"""Pod JSON → run events, stuck-pod verdicts and node reports (no cluster)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from armada.executor.backends.kube_nodes import is_ready, node_reports, pod_requests
from armada.executor.backends.kube_pods import StuckDeadlines, held_phase, pod_run_status, stuck_verdict

LABELS = {"armada_job_run_id": "r1", "armada_job_id": "j1"}


def pod(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "armada-j1-0", "namespace": "default", "labels": LABELS, **meta},
        "spec": {"nodeName": "n1", "containers": [{"name": "main"}]},
        "status": status,
    }


def terminated(code: int, reason: str = "Error") -> dict[str, Any]:
    return {"name": "main", "state": {"terminated": {"exitCode": code, "reason": reason}}}


@pytest.mark.parametrize(
    ("status", "kind", "code", "cause"),
    [
        ({}, "pending", None, ""),
        ({"phase": "Pending"}, "pending", None, ""),
        ({"phase": "Running"}, "running", None, ""),
        ({"phase": "Succeeded"}, "succeeded", 0, ""),
        ({"phase": "Failed", "containerStatuses": [terminated(3)]}, "failed", 3, "Error"),
        ({"phase": "Failed", "containerStatuses": [terminated(137, "OOMKilled")]}, "failed", 137, "OOM"),
        ({"phase": "Failed", "reason": "DeadlineExceeded"}, "failed", None, "DeadlineExceeded"),
        ({"phase": "Failed", "reason": "Evicted", "message": "low memory"}, "failed", None, "Evicted"),
        (
            {"phase": "Failed", "containerStatuses": [terminated(0, "Completed"), terminated(2)]},
            "failed",
            2,
            "Error",
        ),
        (
            {"phase": "Failed", "initContainerStatuses": [terminated(5)], "containerStatuses": []},
            "failed",
            5,
            "Error",
        ),
    ],
)
def test_pod_run_status(status: dict[str, Any], kind: str, code: int | None, cause: str) -> None:
    result = pod_run_status(pod(status))
    assert (result.kind, result.exit_code, result.cause) == (kind, code, cause)
    assert (result.run_id, result.node, result.pod_name) == ("r1", "n1", "armada-j1-0")


def test_failed_reason_and_retryable_eviction() -> None:
    evicted = pod_run_status(pod({"phase": "Failed", "reason": "Evicted", "message": "low memory"}))
    assert evicted.reason == "Evicted low memory" and evicted.retryable and evicted.run_attempted
    oom = pod_run_status(pod({"phase": "Failed", "containerStatuses": [terminated(137, "OOMKilled")]}))
    assert oom.reason == "OOMKilled" and not oom.retryable


def test_held_phase() -> None:
    assert held_phase(pod({"phase": "Pending"})) == "pending"
    assert held_phase(pod({"phase": "Succeeded"})) == "running"
    assert held_phase(pod({"phase": "Running"}, deletionTimestamp="2024-01-01T00:00:00Z")) == "terminating"


DEADLINES = StuckDeadlines(unschedulable=300, image_pull=900, pending=1800)


def waiting(reason: str) -> dict[str, Any]:
    return {
        "phase": "Pending",
        "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": reason}}}],
    }


UNSCHEDULABLE = {
    "phase": "Pending",
    "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    ],
}


@pytest.mark.parametrize(
    ("status", "pending_for", "kind"),
    [
        (waiting("InvalidImageName"), 0, "failed"),
        (waiting("ImagePullBackOff"), 899, None),
        (waiting("ImagePullBackOff"), 900, "leaseReturned"),
        (waiting("ErrImagePull"), 901, "leaseReturned"),
        (waiting("ContainerCreating"), 100, None),
        (UNSCHEDULABLE, 299, None),
        (UNSCHEDULABLE, 300, "leaseReturned"),
        ({"phase": "Pending"}, 1800, "leaseReturned"),
        ({"phase": "Running"}, 10_000, None),
    ],
)
def test_stuck_verdict(status: dict[str, Any], pending_for: float, kind: str | None) -> None:
    verdict = stuck_verdict(pod(status), pending_for=pending_for, deadlines=DEADLINES)
    assert (verdict.kind if verdict else None) == kind
    if verdict is not None:
        assert verdict.retryable == (kind == "leaseReturned")


def test_pod_requests_take_init_container_peak() -> None:
    spec = {
        "spec": {
            "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
            "containers": [
                {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}},
            ],
        }
    }
    assert pod_requests(spec) == {"cpu": 3000, "memory": 2**30, "nvidia.com/gpu": 1}


def test_node_reports_ignore_armada_and_finished_pods() -> None:
    nodes = [{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}]
    pods: list[dict[str, Any]] = [
        {"spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "1"}}}]}},
        {
            "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "2"}}}]},
            "status": {"phase": "Succeeded"},
        },
        {
            "metadata": {"labels": LABELS},
            "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "2"}}}]},
        },
    ]
    [report] = node_reports(nodes, pods)
    assert report.allocated_non_armada == {"cpu": "1", "pods": "1"}
    assert not report.ready


def test_a_node_not_ready_for_less_than_the_grace_period_is_ready() -> None:
    at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    not_ready = [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T11:58:00Z"}]
    assert is_ready(not_ready, 300, at)
    assert not is_ready(not_ready, 60, at)
    assert not is_ready([{"type": "Ready", "status": "Unknown"}], 300, at)
    assert is_ready([{"type": "Ready", "status": "True"}], 0, at)


@pytest.mark.parametrize("code", [0, 143])
@pytest.mark.parametrize(
    "disrupted",
    [
        {
            "status": {
                "conditions": [
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                ]
            }
        },
        {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}},
    ],
)
def test_a_disrupted_or_deleted_pod_is_a_returned_lease_whatever_its_exit_code(
    code: int, disrupted: dict[str, Any]
) -> None:
    phase = "Succeeded" if code == 0 else "Failed"
    subject = pod({"phase": phase, "containerStatuses": [terminated(code)], **disrupted.get("status", {})})
    subject["metadata"].update(disrupted.get("metadata", {}))
    status = pod_run_status(subject)
    assert (status.kind, status.retryable, status.run_attempted) == ("leaseReturned", True, True)


def test_a_kubelet_admission_refusal_is_a_returned_lease_not_an_attempt() -> None:
    status = pod_run_status(pod({"phase": "Failed", "reason": "OutOfnvidia.com/gpu", "message": "no GPU"}))
    assert (status.kind, status.retryable, status.run_attempted) == ("leaseReturned", True, False)
    assert "no GPU" in status.reason
