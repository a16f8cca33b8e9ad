"""Failure categories: the executor names *why* a run failed, so retry policies can decide.

The server's retry policies match on a category (and optional subcategory), never on raw
exit codes or messages: the operator of each cluster knows what its failures look like
(exit 137 here, an NCCL message there) and maps them to shared names in the executor's
settings (``errorCategories``), the same shape as upstream's categorizer. Rules are tried
in configuration order across all categories and the first match wins. When nothing the
operator configured matches, built-in categories name what Armada itself can tell (an
out-of-memory kill, an eviction, a process lost while the executor was down), and failing
that the configured default applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec

from armada.model.numbers import ExitCode

#: Category and subcategory names: as long as upstream's columns (``varchar(63)``).
CategoryName = Annotated[str, msgspec.Meta(max_length=63)]
Condition = Literal["OOMKilled", "Evicted", "DeadlineExceeded"]
PodFailureAction = Literal["Retain", "Delete"]

#: Built-in names for failures Armada itself recognises.
INTERNAL = "internal"
OOM = "oom"
EVICTED = "evicted"
DEADLINE = "deadline-exceeded"
NODE_FAILURE = "node-failure"
LEASE_EXPIRED = "lease-expired"


class _Config(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Settings are camelCase and reject unknown keys (a typo must not disable a rule)."""


class ExitCodeMatcher(_Config, kw_only=True):
    """Matches a container exit code against a set: ``In`` or ``NotIn``."""

    operator: Literal["In", "NotIn"]
    values: list[ExitCode]


class RegexMatcher(_Config, kw_only=True):
    """A regular expression searched (not anchored) in the text."""

    pattern: str


class CategoryRule(_Config, kw_only=True):
    """One way to recognise a category; exactly one ``on*`` matcher is set."""

    on_exit_codes: ExitCodeMatcher | None = None
    on_termination_message: RegexMatcher | None = None
    on_conditions: list[Condition] = []
    on_pod_error: RegexMatcher | None = None
    #: Names the failure more precisely (e.g. ``transient``); empty for none.
    subcategory: CategoryName = ""


class CategoryConfig(_Config, kw_only=True):
    """A named category and the rules (any of which) that recognise it."""

    name: CategoryName
    rules: list[CategoryRule]
    #: What to do with the failed pod: keep it for debugging, or delete it at once so a
    #: retry of the same job can reuse its name.
    action: PodFailureAction = "Retain"


class ErrorCategoriesSettings(_Config, kw_only=True):
    """The executor's ``errorCategories`` settings."""

    #: Categorise failures at all; when off failed events carry no category.
    enabled: bool = True
    #: Category given when neither a rule nor a built-in matches; empty gives none.
    default_category: CategoryName = ""
    #: Subcategory given with ``default_category``.
    default_subcategory: CategoryName = ""
    #: Operator categories, tried in order before the built-ins.
    categories: list[CategoryConfig] = []


@dataclass(frozen=True)
class Failure:
    """What the executor observed of a failed run, whatever its backend."""

    exit_code: int | None = None
    #: The container's termination message (process backend: the tail of its output).
    termination_message: str = ""
    #: The failure's cause as backends report it: ``OOM``, ``Evicted``, ``DeadlineExceeded``.
    cause: str = ""
    #: The executor's own description of the failure.
    message: str = ""
    #: The run's process or pod vanished while the executor was not watching.
    lost: bool = False


@dataclass(frozen=True)
class Classified:
    category: str = ""
    subcategory: str = ""
    action: PodFailureAction = "Retain"


_CONDITION_OF_CAUSE: dict[str, Condition] = {
    "OOM": "OOMKilled",
    "Evicted": "Evicted",
    "DeadlineExceeded": "DeadlineExceeded",
}


@dataclass(frozen=True)
class _Rule:
    category: str
    subcategory: str
    action: PodFailureAction
    exit_codes: ExitCodeMatcher | None
    termination: re.Pattern[str] | None
    pod_error: re.Pattern[str] | None
    conditions: frozenset[str]

    def matches(self, failure: Failure) -> bool:
        if self.exit_codes is not None:
            if failure.exit_code is None:
                return False
            inside = failure.exit_code in self.exit_codes.values
            return inside if self.exit_codes.operator == "In" else not inside
        if self.termination is not None:
            return (
                bool(failure.termination_message)
                and self.termination.search(failure.termination_message) is not None
            )
        if self.pod_error is not None:
            return bool(failure.message) and self.pod_error.search(failure.message) is not None
        return _CONDITION_OF_CAUSE.get(failure.cause, "") in self.conditions


def validate(settings: ErrorCategoriesSettings) -> list[str]:
    """Every problem of the settings as ``field: reason`` (empty when they are usable)."""
    problems: list[str] = []
    seen: set[str] = set()
    for i, category in enumerate(settings.categories):
        where = f"errorCategories.categories[{i}]"
        if not category.name:
            problems.append(f"{where}.name: must not be empty")
        if category.name in seen:
            problems.append(f"{where}.name: duplicate category {category.name!r}")
        seen.add(category.name)
        if not category.rules:
            problems.append(f"{where}.rules: needs at least one rule")
        for j, rule in enumerate(category.rules):
            problems += _rule_problems(rule, f"{where}.rules[{j}]")
    return problems


def _rule_problems(rule: CategoryRule, where: str) -> list[str]:
    set_count = sum(
        (
            rule.on_exit_codes is not None,
            rule.on_termination_message is not None,
            bool(rule.on_conditions),
            rule.on_pod_error is not None,
        )
    )
    if set_count != 1:
        return [
            f"{where}: exactly one of onExitCodes, onTerminationMessage, onConditions, onPodError is needed"
        ]
    if rule.on_exit_codes is not None and not rule.on_exit_codes.values:
        return [f"{where}.onExitCodes.values: needs at least one exit code"]
    for name, matcher in (
        ("onTerminationMessage", rule.on_termination_message),
        ("onPodError", rule.on_pod_error),
    ):
        if matcher is not None:
            try:
                re.compile(matcher.pattern)
            except re.error as exc:
                return [f"{where}.{name}.pattern: not a valid regular expression ({exc})"]
    return []


class Classifier:
    """Names a failure from the operator's rules, then the built-ins, then the default."""

    def __init__(self, settings: ErrorCategoriesSettings) -> None:
        problems = validate(settings)
        if problems:
            raise ValueError("; ".join(problems))
        self._settings = settings
        self._rules = [
            _Rule(
                category=category.name,
                subcategory=rule.subcategory,
                action=category.action,
                exit_codes=rule.on_exit_codes,
                termination=_compile(rule.on_termination_message),
                pod_error=_compile(rule.on_pod_error),
                conditions=frozenset(rule.on_conditions),
            )
            for category in settings.categories
            for rule in category.rules
        ]

    def classify(self, failure: Failure) -> Classified:
        """The first operator rule that matches, else a built-in, else the default."""
        if not self._settings.enabled:
            return Classified()
        for rule in self._rules:
            if rule.matches(failure):
                return Classified(rule.category, rule.subcategory, rule.action)
        builtin = builtin_category(failure)
        if builtin is not None:
            return builtin
        return Classified(self._settings.default_category, self._settings.default_subcategory)


def builtin_category(failure: Failure) -> Classified | None:
    """What Armada recognises by itself, for failures no operator rule named."""
    if failure.cause == "OOM":
        return Classified(OOM)
    if failure.cause == "Evicted":
        return Classified(INTERNAL, EVICTED)
    if failure.cause == "DeadlineExceeded":
        return Classified(INTERNAL, DEADLINE)
    if failure.lost:
        return Classified(INTERNAL, NODE_FAILURE)
    return None


def _compile(matcher: RegexMatcher | None) -> re.Pattern[str] | None:
    return re.compile(matcher.pattern) if matcher is not None else None
