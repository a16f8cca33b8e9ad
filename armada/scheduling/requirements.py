"""What a job needs from a node, and the *scheduling key* that groups identical needs.

The API (validation) and the scheduler service (feeding the job database) both derive
:class:`JobRequirements` from a Kubernetes pod spec with :func:`requirements_from_pod_spec`, so
the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from armada.model.jobs import Job
from armada.model.quantities import QuantityError, to_units

GANG_ID_ANNOTATION = "armadaproject.io/gangId"
GANG_CARDINALITY_ANNOTATION = "armadaproject.io/gangCardinality"
GANG_NODE_UNIFORMITY_LABEL_ANNOTATION = "armadaproject.io/gangNodeUniformityLabel"

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
AffinityOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class RequirementsError(ValueError):
    """A pod spec or annotation the scheduler cannot interpret; ``field`` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class Toleration(msgspec.Struct, frozen=True, rename="camel"):
    """A Kubernetes toleration; empty ``effect`` tolerates every effect."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: str = ""


class NodeSelectorRequirement(msgspec.Struct, frozen=True, rename="camel"):
    """One expression of a node selector term (all expressions of a term must hold)."""

    key: str
    operator: AffinityOperator
    values: tuple[str, ...] = ()


class NodeSelectorTerm(msgspec.Struct, frozen=True, rename="camel"):
    """One alternative of required node affinity (any term may hold)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()


class JobRequirements(msgspec.Struct, frozen=True, rename="camel"):
    """One job as the scheduler sees it: who, how urgent, and what it needs from a node."""

    id: str
    queue: str
    #: Resource requests as integer units (see :func:`armada.model.resources.to_units`).
    requests: dict[str, int]
    priority_class_name: str = ""
    #: Lower runs earlier within the queue (upstream semantics).
    priority: float = 0.0
    #: Submission time (any monotone clock); older jobs run first among equals.
    submitted: float = 0.0
    node_selector: dict[str, str] = msgspec.field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    #: Required node affinity (``nodeSelectorTerms``); empty = no constraint.
    affinity: tuple[NodeSelectorTerm, ...] = ()
    #: Pools the job may run in; empty = any pool.
    pools: tuple[str, ...] = ()
    gang_id: str = ""
    gang_cardinality: int = 1
    gang_node_uniformity_label: str = ""

    def key(self, default_priority_class: str) -> SchedulingKey:
        """The scheduling key: equal for jobs that are interchangeable to the scheduler."""
        return (
            tuple(sorted((name, units) for name, units in self.requests.items() if units)),
            self.priority_class_name or default_priority_class,
            tuple(sorted(self.node_selector.items())),
            tuple(sorted(set(self.tolerations), key=lambda t: (t.key, t.operator, t.value, t.effect))),
            self.affinity,
            tuple(sorted(set(self.pools))),
            self.gang_cardinality if self.gang_id else 0,
            self.gang_node_uniformity_label if self.gang_id else "",
        )


#: requests, priority class, node selector, tolerations, affinity, pools, gang cardinality, uniformity label.
SchedulingKey = tuple[
    tuple[tuple[str, int], ...],
    str,
    tuple[tuple[str, str], ...],
    tuple[Toleration, ...],
    tuple[NodeSelectorTerm, ...],
    tuple[str, ...],
    int,
    str,
]


def _container_requests(container: Mapping[str, Any], where: str) -> dict[str, int]:
    resources = container.get("resources") or {}
    # Kubernetes defaults requests to limits when only limits are given.
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    out: dict[str, int] = {}
    for name, value in merged.items():
        try:
            out[name] = to_units(name, value)
        except QuantityError as exc:
            raise RequirementsError(f"{where}.resources.requests.{name}", str(exc)) from exc
        if out[name] < 0:
            raise RequirementsError(f"{where}.resources.requests.{name}", "must not be negative")
    return out


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective pod requests: sum over containers, at least the largest init container."""
    total: dict[str, int] = {}
    for i, container in enumerate(pod_spec.get("containers") or []):
        for name, units in _container_requests(container, f"containers[{i}]").items():
            total[name] = total.get(name, 0) + units
    for i, container in enumerate(pod_spec.get("initContainers") or []):
        for name, units in _container_requests(container, f"initContainers[{i}]").items():
            total[name] = max(total.get(name, 0), units)
    return total


def _gang(annotations: Mapping[str, str]) -> tuple[str, int, str]:
    gang_id = annotations.get(GANG_ID_ANNOTATION, "")
    label = annotations.get(GANG_NODE_UNIFORMITY_LABEL_ANNOTATION, "")
    raw = annotations.get(GANG_CARDINALITY_ANNOTATION)
    if not gang_id:
        if raw is not None or label:
            raise RequirementsError(f"annotations.{GANG_ID_ANNOTATION}", "required for gang annotations")
        return "", 1, ""
    try:
        cardinality = int(raw) if raw is not None else 0
    except ValueError:
        cardinality = 0
    if cardinality < 1:
        raise RequirementsError(f"annotations.{GANG_CARDINALITY_ANNOTATION}", "must be an integer >= 1")
    return gang_id, cardinality, label


def _affinity(pod_spec: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...]:
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:  # most jobs: spare the conversion (~2 us a call, once per submitted job)
        return ()
    try:
        return msgspec.convert(terms, tuple[NodeSelectorTerm, ...])
    except msgspec.ValidationError as exc:
        raise RequirementsError(
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", str(exc)
        ) from exc


def requirements_from_pod_spec(
    *,
    job_id: str,
    queue: str,
    pod_spec: Mapping[str, Any],
    annotations: Mapping[str, str] | None = None,
    priority: float = 0.0,
    submitted: float = 0.0,
    pools: tuple[str, ...] = (),
) -> JobRequirements:
    """Derive a job's scheduling requirements from its pod spec and annotations."""
    gang_id, cardinality, label = _gang(annotations or {})
    tolerations: tuple[Toleration, ...] = ()
    if listed := pod_spec.get("tolerations"):
        try:
            tolerations = msgspec.convert(listed, tuple[Toleration, ...])
        except msgspec.ValidationError as exc:
            raise RequirementsError("tolerations", str(exc)) from exc
    selector = pod_spec.get("nodeSelector") or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items()):
        raise RequirementsError("nodeSelector", "keys and values must be strings")
    return JobRequirements(
        id=job_id,
        queue=queue,
        requests=pod_requests(pod_spec),
        priority_class_name=pod_spec.get("priorityClassName") or "",
        priority=priority,
        submitted=submitted,
        node_selector=dict(selector),
        tolerations=tolerations,
        affinity=_affinity(pod_spec),
        pools=tuple(pools),
        gang_id=gang_id,
        gang_cardinality=cardinality,
        gang_node_uniformity_label=label,
    )


def job_requirements(job: Job, *, submitted: float) -> JobRequirements:
    """The scheduling requirements of a submitted job."""
    return requirements_from_pod_spec(
        job_id=job.id,
        queue=job.queue,
        pod_spec=job.pod_spec,
        annotations=job.annotations,
        priority=job.priority,
        submitted=submitted,
    )
