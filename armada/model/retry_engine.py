"""The retry engine's decision: pure, so budgets can be checked by property tests.

Given the policy that applies to a job, the category of its failure and the retries it has
already been granted, say "retry" or "fail" and why. The budget rules are upstream's
(docs/retry_policies.md there): ``retryLimit`` counts retries, not attempts; only genuine
failures (a failed run, an expired lease) spend it; returned leases and preemptions are
free; ``globalMaxRetries`` caps every policy and ``0`` grants nothing (the kill switch).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

import msgspec

from armada.model.events import JobQueued
from armada.model.retry import Mutation, RetryPolicy, matching_rule

#: Annotation that opts a job out of the engine: it fails on its first failure.
FAIL_FAST_ANNOTATION = "armadaproject.io/failFast"


class RetryEngineSettings(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """``scheduling.retryPolicy``: the retry engine (off: legacy ``maxRetries`` behaviour)."""

    #: Let retry policies decide failed runs.
    enabled: bool = False
    #: Retries any job may be granted at most, whatever its policy says; ``0`` grants none.
    global_max_retries: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 5
    #: Policy for jobs whose queue names none; empty: such queues keep the legacy behaviour.
    default_policy_name: str = ""
    #: Retry gangs as one (stop the other members, requeue all); off: gangs keep the legacy
    #: path, as upstream's engine does.
    retry_gangs: bool = True


@dataclass(frozen=True)
class Verdict:
    """What the engine decided, and enough to explain it in the job's history."""

    retry: bool
    policy: str
    #: Index of the rule that decided; ``None``: ``defaultAction`` (or a budget) decided.
    rule: int | None
    explanation: str
    mutate: Mutation | None = None


def policy_name_for(queue_policies: list[str], settings: RetryEngineSettings) -> str:
    """The policy that applies to a queue's jobs: its first, else the default, else none."""
    if not settings.enabled:
        return ""
    return queue_policies[0] if queue_policies else settings.default_policy_name


def fail_fast(annotations: dict[str, str]) -> bool:
    return annotations.get(FAIL_FAST_ANNOTATION, "").strip().lower() == "true"


def retries_granted(queued: Iterable[JobQueued]) -> int:
    """The budget a job has spent: the most retries any of its ``queued`` events records.

    The largest, not the last: a requeue outside the engine (a returned lease, a preemption
    the job opted into) records none, and must not give the budget back.
    """
    return max((event.failure_retries for event in queued), default=0)


def decide(
    policy: RetryPolicy,
    *,
    category: str,
    subcategory: str,
    retries_used: int,
    global_max_retries: int,
    fail_fast_job: bool = False,
) -> Verdict:
    """Retry or fail one genuine failure; ``retries_used`` counts earlier granted retries."""
    name = policy.name
    if fail_fast_job:
        return Verdict(False, name, None, f"{FAIL_FAST_ANNOTATION} is set: not retried")
    index = matching_rule(policy, category, subcategory)
    named = f"{category}/{subcategory}" if subcategory else (category or "uncategorised")
    if index is None:
        action, mutate, which = policy.default_action, None, f"no rule matches {named}: defaultAction"
    else:
        rule = policy.rules[index]
        action, mutate, which = rule.action, rule.mutate, f"rule {index} (onCategory {named})"
    if action == "Fail":
        return Verdict(False, name, index, f"retry policy {name!r} {which} says Fail")
    if retries_used >= global_max_retries:
        return Verdict(
            False, name, index, f"globalMaxRetries {global_max_retries} reached ({retries_used} retries)"
        )
    if retries_used >= policy.retry_limit:
        return Verdict(False, name, index, f"retry policy {name!r} retryLimit {policy.retry_limit} reached")
    return Verdict(
        True,
        name,
        index,
        f"retry {retries_used + 1} of {policy.retry_limit} by retry policy {name!r} {which}",
        mutate,
    )
