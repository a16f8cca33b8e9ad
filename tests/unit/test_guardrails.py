"""Submission guardrails: settings validated at start-up, defaults and bounds applied at submit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from armada.model.errors import InvalidRequest
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION, GANG_NODE_UNIFORMITY_ANNOTATION
from armada.model.wire.jobs import JobSubmitRequest
from armada.services.guardrails import Guardrails
from armada.services.validation import SubmissionRules, ValidItem, validate_submission
from armada.settings import Settings, SettingsError, load_settings

GPU_TOLERATION = {"key": "armadaproject.io/gpu", "operator": "Exists", "value": "", "effect": "NoSchedule"}
ALL_TOLERATION = {"key": "example.com/default", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
PREEMPTIBLE_TOLERATION = {"key": "pc/preemptible", "operator": "Equal", "value": "true", "effect": ""}

GUARDRAILS = {
    "defaultActiveDeadline": "72h",
    "defaultActiveDeadlineByResourceRequest": {"nvidia.com/gpu": "336h", "example.com/fpga": "1h"},
    "minTerminationGracePeriod": "1s",
    "maxTerminationGracePeriod": "5m",
    "defaultJobTolerations": [ALL_TOLERATION],
    "defaultJobTolerationsByPriorityClass": {"armada-preemptible": [PREEMPTIBLE_TOLERATION]},
    "defaultJobTolerationsByResourceRequest": {"nvidia.com/gpu": [GPU_TOLERATION]},
    "defaultGangNodeUniformityLabel": "rack",
}


def settings(**submission: Any) -> Settings:
    return load_settings(env={}, overrides={"submission": {**GUARDRAILS, **submission}})


def rules(**submission: Any) -> SubmissionRules:
    return SubmissionRules.from_settings(settings(**submission))


def pod(gpu: int = 0, **fields: Any) -> dict[str, Any]:
    resources = {"cpu": "1", "memory": "1Gi", **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
    container = {"name": "c", "image": "busybox", "resources": {"requests": resources, "limits": resources}}
    return {"containers": [container], **fields}


def validate(
    *pod_specs: dict[str, Any], annotations: dict[str, str] | None = None, **kw: Any
) -> list[ValidItem]:
    items = [{"namespace": "default", "podSpec": p, "annotations": annotations or {}} for p in pod_specs]
    request = msgspec.convert({"queue": "q", "jobSetId": "s", "jobRequestItems": items}, JobSubmitRequest)
    return validate_submission(request, rules(**kw))


def test_upstream_example_config_loads(tmp_path: Path) -> None:
    """Upstream's server config spells these keys the same way (``submission:``)."""
    config = tmp_path / "armada.yaml"
    config.write_text(
        "submission:\n"
        "  defaultJobTolerations:\n"
        "    - {key: example.com/default_toleration, operator: Equal, value: 'true', effect: NoSchedule}\n"
        "  defaultJobTolerationsByPriorityClass:\n"
        "    armada-default:\n"
        "      - {key: armadaproject.io/pc-armada-default, operator: Equal, value: 'true',\n"
        "         effect: NoSchedule}\n"
        "  minTerminationGracePeriod: 1s\n"
        "  maxTerminationGracePeriod: 5m\n"
        "  defaultActiveDeadline: 72h\n"
        "  defaultActiveDeadlineByResourceRequest:\n"
        "    nvidia.com/gpu: 336h\n"
        "scheduling:\n"
        "  priorityClassNameOverride: armada-default\n"
    )
    loaded = load_settings(config, env={})
    assert loaded.scheduling.priority_class_name_override == "armada-default"
    guard = Guardrails.from_settings(loaded.submission)
    assert (guard.active_deadline, guard.active_deadline_by_resource) == (
        72 * 3600,
        {"nvidia.com/gpu": 336 * 3600},
    )
    assert (guard.min_grace, guard.max_grace) == (1, 300)


@pytest.mark.parametrize(
    ("submission", "message"),
    [
        ({"defaultActiveDeadline": "3 days"}, "submission.defaultActiveDeadline: not a duration"),
        (
            {"defaultActiveDeadlineByResourceRequest": {"nvidia.com/gpu": "-1h"}},
            "submission.defaultActiveDeadlineByResourceRequest.nvidia.com/gpu",
        ),
        ({"minTerminationGracePeriod": "soon"}, "submission.minTerminationGracePeriod"),
        (
            {"minTerminationGracePeriod": "10m"},
            "minTerminationGracePeriod is longer than maxTerminationGracePeriod",
        ),
        ({"defaultJobTolerationsByPriorityClass": {"gold": []}}, "unknown priority classes gold"),
        ({"defaultJobTolerations": [{"key": "k", "operator": "Maybe"}]}, "operator"),
    ],
)
def test_bad_settings_are_refused_at_start_up(submission: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings(**submission)


def test_defaults_are_off_unless_configured() -> None:
    (valid,) = validate_submission(
        msgspec.convert(
            {"queue": "q", "jobSetId": "s", "jobRequestItems": [{"namespace": "default", "podSpec": pod()}]},
            JobSubmitRequest,
        ),
        SubmissionRules.from_settings(Settings()),
    )
    assert valid.pod_spec == pod()


def test_every_pod_default_is_applied() -> None:
    (plain,) = validate(pod())
    assert plain.pod_spec["activeDeadlineSeconds"] == 72 * 3600
    assert plain.pod_spec["terminationGracePeriodSeconds"] == 1
    assert plain.pod_spec["tolerations"] == [ALL_TOLERATION]
    (gpu,) = validate(pod(gpu=1, priorityClassName="armada-preemptible"))
    assert gpu.pod_spec["activeDeadlineSeconds"] == 336 * 3600  # the resource's default trumps
    assert gpu.pod_spec["tolerations"] == [ALL_TOLERATION, PREEMPTIBLE_TOLERATION, GPU_TOLERATION]


def test_the_pods_own_values_are_kept() -> None:
    own = {"key": "mine", "operator": "Exists", "value": "", "effect": ""}
    (valid,) = validate(
        pod(activeDeadlineSeconds=60, terminationGracePeriodSeconds=30, tolerations=[own, ALL_TOLERATION])
    )
    assert valid.pod_spec["activeDeadlineSeconds"] == 60
    assert valid.pod_spec["terminationGracePeriodSeconds"] == 30
    assert valid.pod_spec["tolerations"] == [own, ALL_TOLERATION]  # no duplicate added


def test_zero_grace_period_becomes_the_minimum() -> None:
    (valid,) = validate(pod(terminationGracePeriodSeconds=0))
    assert valid.pod_spec["terminationGracePeriodSeconds"] == 1


def test_longest_matching_resource_deadline_wins() -> None:
    fpga = pod()
    for section in ("requests", "limits"):
        fpga["containers"][0]["resources"][section]["example.com/fpga"] = "1"
        fpga["containers"][0]["resources"][section]["nvidia.com/gpu"] = "1"
    (valid,) = validate(fpga)
    assert valid.pod_spec["activeDeadlineSeconds"] == 336 * 3600


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"terminationGracePeriodSeconds": 301}, "terminationGracePeriodSeconds", r"outside \[1, 300\]"),
        ({"terminationGracePeriodSeconds": -1}, "terminationGracePeriodSeconds", "whole number"),
        ({"terminationGracePeriodSeconds": "30"}, "terminationGracePeriodSeconds", "whole number"),
        ({"activeDeadlineSeconds": 0}, "activeDeadlineSeconds", "whole number of seconds >= 1"),
        ({"activeDeadlineSeconds": 2**63}, "activeDeadlineSeconds", "whole number"),
        ({"tolerations": {"key": "x"}}, "tolerations", "must be a list"),
    ],
)
def test_out_of_bounds_pods_are_refused_naming_the_field(
    fields: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(InvalidRequest, match=reason) as caught:
        validate(pod(), pod(**fields))
    assert caught.value.field == f"jobRequestItems[1].podSpec.{field}"


def test_grace_bounds_off_allow_any_grace_period() -> None:
    (valid,) = validate(
        pod(terminationGracePeriodSeconds=3600), minTerminationGracePeriod="", maxTerminationGracePeriod=""
    )
    assert valid.pod_spec["terminationGracePeriodSeconds"] == 3600


def test_gangs_get_the_default_uniformity_label() -> None:
    gang = {GANG_ID_ANNOTATION: "g", GANG_CARDINALITY_ANNOTATION: "2"}
    members = validate(pod(), pod(), annotations=gang)
    assert {m.item.annotations[GANG_NODE_UNIFORMITY_ANNOTATION] for m in members} == {"rack"}
    (own,) = validate(pod(), annotations={**gang, GANG_NODE_UNIFORMITY_ANNOTATION: "zone"})
    assert own.item.annotations[GANG_NODE_UNIFORMITY_ANNOTATION] == "zone"
    # A gang of one is no gang (as upstream): no label added.
    (single,) = validate(pod(), annotations={GANG_ID_ANNOTATION: "g1", GANG_CARDINALITY_ANNOTATION: "1"})
    assert GANG_NODE_UNIFORMITY_ANNOTATION not in single.item.annotations
