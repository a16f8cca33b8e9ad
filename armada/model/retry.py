"""Retry policies: named rules that decide, per queue, whether a categorised failure is retried.

A policy is a resource of its own (like a queue), so one policy can serve many queues and
be changed in one place. Its rules match on the failure category the executor assigned
(never on raw exit codes: clusters differ in what a code means); the first matching rule
decides, else ``defaultAction``. Field names and semantics follow upstream Armada's
``RetryPolicy`` (docs/retry_policies.md there).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from armada.model.errors import InvalidRequest
from armada.model.numbers import Count
from armada.model.quantities import parse_quantity

#: Policy names follow queue names: safe in URLs and metric labels.
POLICY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
RetryAction = Literal["Retry", "Fail"]
#: Categories as the executor names them (upstream's ``varchar(63)``).
CategoryName = Annotated[str, msgspec.Meta(max_length=63)]
#: A memory growth factor: more than one, and small enough that compounding stays finite.
GrowthFactor = Annotated[float, msgspec.Meta(gt=1, le=100, description="A number above 1, at most 100.")]


class _Spec(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True, forbid_unknown_fields=True):
    """Policies are user input: camelCase, unknown fields rejected (a typo must not widen retries)."""


class MemoryMutation(_Spec, kw_only=True):
    """Grow memory requests and limits on retry: by ``factor`` or by a ``static`` quantity."""

    factor: GrowthFactor | None = None
    static: Annotated[str, msgspec.Meta(max_length=64)] = ""


class ResourcesMutation(_Spec, kw_only=True):
    memory: MemoryMutation | None = None


class AffinityMutation(_Spec, kw_only=True):
    #: Keep the retry off every node a previous run of the job used.
    avoid_same_node: bool = False


class Mutation(_Spec, kw_only=True):
    """Changes applied to the job when its rule retries it."""

    affinity: AffinityMutation | None = None
    resources: ResourcesMutation | None = None


class RetryRule(_Spec, kw_only=True):
    action: RetryAction
    on_category: CategoryName = ""
    #: Narrows ``onCategory``; only valid with it.
    on_subcategory: CategoryName = ""
    mutate: Mutation | None = None


class RetryPolicy(_Spec, kw_only=True):
    """A named retry policy (upstream ``api.RetryPolicy``)."""

    name: str
    #: Retries after the first failure: 3 allows 4 attempts in all.
    retry_limit: Count = 0
    default_action: RetryAction = "Fail"
    rules: list[RetryRule] = []
    # Accepted so that upstream's policy files load unchanged.
    api_version: Annotated[str, msgspec.Meta(max_length=64)] = ""
    kind: Annotated[str, msgspec.Meta(max_length=64)] = ""


def check_policy(policy: RetryPolicy) -> None:
    """Raise ``InvalidRequest`` naming the first bad field; the policy is otherwise usable."""
    if not POLICY_NAME.match(policy.name):
        raise InvalidRequest(
            "retry policy names are 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit",
            field="name",
        )
    if policy.kind and policy.kind != "RetryPolicy":
        raise InvalidRequest("kind must be RetryPolicy (or left out)", field="kind")
    for i, rule in enumerate(policy.rules):
        where = f"rules[{i}]"
        if not rule.on_category:
            raise InvalidRequest("a rule must name onCategory", field=f"{where}.onCategory")
        if rule.mutate is None:
            continue
        if rule.action == "Fail":
            raise InvalidRequest("mutate applies only to Retry rules", field=f"{where}.mutate")
        memory = rule.mutate.resources.memory if rule.mutate.resources else None
        if memory is not None:
            _check_memory(memory, f"{where}.mutate.resources.memory")


def _check_memory(memory: MemoryMutation, where: str) -> None:
    if (memory.factor is None) == (not memory.static):
        raise InvalidRequest("set exactly one of factor or static", field=where)
    if memory.static:
        try:
            amount = parse_quantity(memory.static)
        except ValueError as exc:
            raise InvalidRequest(f"not a Kubernetes quantity: {exc}", field=f"{where}.static") from exc
        if amount <= 0:
            raise InvalidRequest("must be a positive quantity", field=f"{where}.static")


def matching_rule(policy: RetryPolicy, category: str, subcategory: str) -> int | None:
    """Index of the first rule matching the failure's category (exact, case-sensitive)."""
    for i, rule in enumerate(policy.rules):
        if rule.on_category != category:
            continue
        if rule.on_subcategory and rule.on_subcategory != subcategory:
            continue
        return i
    return None
