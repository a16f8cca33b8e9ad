"""Failure categories: first match wins across categories, then built-ins, then the default."""

from __future__ import annotations

import msgspec
import pytest

from armada.executor.categories import Classified, Classifier, ErrorCategoriesSettings, Failure, validate

SETTINGS = msgspec.convert(
    {
        "defaultCategory": "unknown",
        "categories": [
            {"name": "user-error", "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}]},
            {
                "name": "transient",
                "action": "Delete",
                "rules": [
                    {"onExitCodes": {"operator": "In", "values": [42]}, "subcategory": "exit42"},
                    {"onTerminationMessage": {"pattern": "NCCL (timeout|error)"}, "subcategory": "nccl"},
                ],
            },
            {"name": "memory", "rules": [{"onConditions": ["OOMKilled"]}]},
            {"name": "infra", "rules": [{"onPodError": {"pattern": "^ImagePull"}}]},
            {"name": "other", "rules": [{"onExitCodes": {"operator": "NotIn", "values": [0, 1]}}]},
        ],
    },
    ErrorCategoriesSettings,
)


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (Failure(exit_code=3), Classified("user-error")),
        (Failure(exit_code=42), Classified("transient", "exit42", "Delete")),
        (
            Failure(exit_code=1, termination_message="boom: NCCL timeout"),
            Classified("transient", "nccl", "Delete"),
        ),
        (Failure(exit_code=137, cause="OOM"), Classified("memory")),
        (Failure(message="ImagePullBackOff: nope"), Classified("infra")),
        (Failure(exit_code=7), Classified("other")),
        (Failure(exit_code=1), Classified("unknown")),
        (Failure(exit_code=1, cause="Evicted"), Classified("internal", "evicted")),
        (Failure(lost=True), Classified("internal", "node-failure")),
    ],
)
def test_first_match_wins_then_builtins_then_default(failure: Failure, expected: Classified) -> None:
    assert Classifier(SETTINGS).classify(failure) == expected


def test_builtin_oom_without_operator_rules() -> None:
    assert Classifier(ErrorCategoriesSettings()).classify(Failure(exit_code=137, cause="OOM")) == Classified(
        "oom"
    )


def test_disabled_names_nothing() -> None:
    settings = msgspec.structs.replace(SETTINGS, enabled=False)
    assert Classifier(settings).classify(Failure(exit_code=3)) == Classified()


@pytest.mark.parametrize(
    ("category", "problem"),
    [
        ({"name": "a", "rules": []}, "rules: needs at least one rule"),
        ({"name": "a", "rules": [{}]}, "exactly one of"),
        (
            {
                "name": "a",
                "rules": [{"onExitCodes": {"operator": "In", "values": [1]}, "onConditions": ["Evicted"]}],
            },
            "exactly one of",
        ),
        (
            {"name": "a", "rules": [{"onPodError": {"pattern": "("}}]},
            "onPodError.pattern: not a valid regular",
        ),
        ({"name": "a", "rules": [{"onExitCodes": {"operator": "In", "values": []}}]}, "onExitCodes.values"),
    ],
)
def test_bad_settings_are_named(category: dict[str, object], problem: str) -> None:
    settings = msgspec.convert({"categories": [category]}, ErrorCategoriesSettings)
    problems = validate(settings)
    assert any(problem in p for p in problems), problems
    with pytest.raises(ValueError):
        Classifier(settings)


def test_unknown_condition_and_operator_are_rejected_on_load() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(
            {"categories": [{"name": "a", "rules": [{"onConditions": ["Melted"]}]}]}, ErrorCategoriesSettings
        )
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(
            {"categories": [{"name": "a", "rules": [{"onExitCodes": {"operator": "Is", "values": [1]}}]}]},
            ErrorCategoriesSettings,
        )
