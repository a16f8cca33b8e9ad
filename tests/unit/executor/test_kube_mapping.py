"""Pod JSON → run events, stuck-pod verdicts and node reports (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from armada.executor.backends.kube_nodes import node_reports, pod_requests
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
    assert report.allocated_non_armada == {"cpu": "1"}
    assert not report.ready
