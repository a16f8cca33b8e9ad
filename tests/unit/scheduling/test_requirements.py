"""Deriving job requirements from pod specs, and scheduling keys."""

from __future__ import annotations

import pytest

from armada.scheduling import JobRequirements, RequirementsError, Toleration, requirements_from_pod_spec
from armada.scheduling.requirements import (
    GANG_CARDINALITY_ANNOTATION,
    GANG_ID_ANNOTATION,
    GANG_NODE_UNIFORMITY_LABEL_ANNOTATION,
)

POD = {
    "priorityClassName": "armada-preemptible",
    "nodeSelector": {"zone": "a"},
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["amd64"]}]}
                ]
            }
        }
    },
    "containers": [
        {"resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}},
        {"resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
    ],
    "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}],
}


def test_pod_spec_derivation() -> None:
    annotations = {
        GANG_ID_ANNOTATION: "g",
        GANG_CARDINALITY_ANNOTATION: "3",
        GANG_NODE_UNIFORMITY_LABEL_ANNOTATION: "rack",
    }
    req = requirements_from_pod_spec(job_id="j", queue="q", pod_spec=POD, annotations=annotations, priority=2)
    assert req.requests == {"cpu": 2000, "memory": 1536 * 2**20, "nvidia.com/gpu": 1}
    assert req.priority_class_name == "armada-preemptible"
    assert req.node_selector == {"zone": "a"}
    assert req.tolerations == (Toleration("gpu", "Exists", "", "NoSchedule"),)
    assert req.affinity[0].match_expressions[0].values == ("amd64",)
    assert (req.gang_id, req.gang_cardinality, req.gang_node_uniformity_label) == ("g", 3, "rack")


@pytest.mark.parametrize(
    ("pod", "annotations", "field"),
    [
        (
            {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]},
            {},
            "containers[0].resources.requests.cpu",
        ),
        (
            {"containers": [{"resources": {"requests": {"cpu": "-1"}}}]},
            {},
            "containers[0].resources.requests.cpu",
        ),
        (
            {"containers": []},
            {GANG_ID_ANNOTATION: "g", GANG_CARDINALITY_ANNOTATION: "x"},
            f"annotations.{GANG_CARDINALITY_ANNOTATION}",
        ),
        ({"containers": []}, {GANG_CARDINALITY_ANNOTATION: "2"}, f"annotations.{GANG_ID_ANNOTATION}"),
        ({"tolerations": [{"operator": "Sometimes"}]}, {}, "tolerations"),
        ({"nodeSelector": {"a": 1}}, {}, "nodeSelector"),
    ],
)
def test_bad_input_names_the_field(pod: dict[str, object], annotations: dict[str, str], field: str) -> None:
    with pytest.raises(RequirementsError) as error:
        requirements_from_pod_spec(job_id="j", queue="q", pod_spec=pod, annotations=annotations)
    assert error.value.field == field


def test_scheduling_key_ignores_identity_and_order_but_not_needs() -> None:
    a = JobRequirements(
        id="a",
        queue="q1",
        requests={"cpu": 1, "memory": 0},
        submitted=1,
        priority=3,
        tolerations=(Toleration("x"), Toleration("y")),
        gang_id="g1",
        gang_cardinality=2,
    )
    b = JobRequirements(
        id="b",
        queue="q2",
        requests={"cpu": 1},
        submitted=2,
        tolerations=(Toleration("y"), Toleration("x")),
        gang_id="g2",
        gang_cardinality=2,
    )
    assert a.key("armada-default") == b.key("armada-default")
    assert a.key("d") != JobRequirements(id="c", queue="q", requests={"cpu": 2}).key("d")
    assert JobRequirements(id="c", queue="q", requests={}).key("d")[1] == "d"
