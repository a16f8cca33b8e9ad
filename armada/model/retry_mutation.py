"""How a retry policy's ``mutate`` changes a job before it runs again (upstream's rules).

* ``affinity.avoidSameNode``: the retry may not run on any node an earlier run failed on —
  a ``NotIn`` node-affinity expression on the node name label, added to every term (terms
  are alternatives, so each must exclude the nodes), growing with each retry. The legacy
  retry path fences jobs off the same way, by any node labels (:func:`avoid_node_labels`).
* ``resources.memory``: requests and limits grow by ``factor`` (rounded up) or by a
  ``static`` quantity, compounding across retries; a job keeps to one kind of bump (the first
  one applied is recorded in an annotation, and a later rule of the other kind is skipped).

The result is a whole new job spec: the server requeues the job with it, so the scheduler,
the views and the executor's pod all see the same grown, fenced job.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

from armada.model.jobs import Job, ResourceRequirements
from armada.model.quantities import parse_quantity
from armada.model.retry import MemoryMutation, Mutation

#: Records which kind of memory bump (``factor`` or ``static``) a job has had.
MEMORY_BUMP_ANNOTATION = "armadaproject.io/retryMemoryBump"
#: The label that names a node (set on every node the executors report).
NODE_NAME_LABEL = "kubernetes.io/hostname"


def mutate_job(job: Job, mutation: Mutation, failed_node: str) -> Job | None:
    """The job as its retry should run, or ``None`` when the mutation changes nothing."""
    pod_spec: dict[str, Any] = copy.deepcopy(job.pod_spec)
    annotations = dict(job.annotations)
    requirements = job.scheduling_resource_requirements
    changed = False
    if mutation.affinity is not None and mutation.affinity.avoid_same_node and failed_node:
        changed |= _avoid(pod_spec, NODE_NAME_LABEL, failed_node)
    memory = mutation.resources.memory if mutation.resources else None
    if memory is not None:
        kind = "factor" if memory.factor is not None else "static"
        if annotations.get(MEMORY_BUMP_ANNOTATION, kind) == kind:
            added = _grow_memory(pod_spec, memory)
            if added:
                annotations[MEMORY_BUMP_ANNOTATION] = kind
                requirements = _add_request(requirements, added)
                changed = True
    if not changed:
        return None
    return msgspec.structs.replace(
        job, pod_spec=pod_spec, annotations=annotations, scheduling_resource_requirements=requirements
    )


def avoid_node_labels(job: Job, values: Mapping[str, str]) -> Job | None:
    """The job kept off nodes with any of these label values (e.g. the failed node's name or
    rack), or ``None`` when it already avoids them all."""
    pod_spec: dict[str, Any] = copy.deepcopy(job.pod_spec)
    changed = False
    for label, value in values.items():
        changed |= _avoid(pod_spec, label, value)
    return msgspec.structs.replace(job, pod_spec=pod_spec) if changed else None


def avoided_nodes(job: Job) -> list[str]:
    """Nodes the job's node affinity excludes by name (what ``avoidSameNode`` added)."""
    terms = _terms(job.pod_spec)
    for term in terms:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == NODE_NAME_LABEL and expression.get("operator") == "NotIn":
                return list(expression.get("values") or [])
    return []


def _terms(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    affinity = pod_spec.get("affinity") or {}
    node = affinity.get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def _avoid(pod_spec: dict[str, Any], label: str, value: str) -> bool:
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({})
    changed = False
    for term in terms:
        expressions = term.setdefault("matchExpressions", [])
        mine = next((e for e in expressions if e.get("key") == label and e.get("operator") == "NotIn"), None)
        if mine is None:
            expressions.append({"key": label, "operator": "NotIn", "values": [value]})
            changed = True
        elif value not in mine.setdefault("values", []):
            mine["values"].append(value)
            changed = True
    return changed


def _grow_memory(pod_spec: dict[str, Any], memory: MemoryMutation) -> int:
    """Grow every container's memory request and limit; the bytes added to the requests."""
    static = parse_quantity(memory.static) if memory.static else Decimal(0)
    added_requests = 0
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            amounts = resources.get(section) or {}
            if "memory" not in amounts:
                continue
            before = math.ceil(parse_quantity(amounts["memory"]))
            after = (
                math.ceil(before * memory.factor) if memory.factor is not None else before + math.ceil(static)
            )
            amounts["memory"] = str(after)
            if section == "requests":
                added_requests += after - before
    return added_requests


def _add_request(requirements: ResourceRequirements, added: int) -> ResourceRequirements:
    requests = dict(requirements.requests)
    before = math.ceil(parse_quantity(requests["memory"])) if "memory" in requests else 0
    requests["memory"] = str(before + added)
    return msgspec.structs.replace(requirements, requests=requests)
