"""Submission guardrails: the server's defaults and bounds for pods (upstream's ``submission`` keys).

Applied at submit, into the stored job, so the scheduler, the job's details and the pod the
executor builds all see the same spec: ``activeDeadlineSeconds`` for pods that set none
(``defaultActiveDeadline``, trumped by the longest matching
``defaultActiveDeadlineByResourceRequest``), ``terminationGracePeriodSeconds`` within
``[minTerminationGracePeriod, maxTerminationGracePeriod]`` (missing or 0 becomes the minimum),
default tolerations (for all, per priority class, per requested resource), and the node
uniformity label of gangs that name none. Pure: no I/O, shared with the CLI's ``--dry-run``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from armada.model.durations import setting_seconds
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION, GANG_NODE_UNIFORMITY_ANNOTATION

if TYPE_CHECKING:
    from armada.services.settings import SubmissionSettings

#: Kubernetes holds both fields as int64.
_MAX_SECONDS = 2**63 - 1
Tolerations = tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Guardrails:
    """The ``submission`` guardrail settings, parsed once (durations as whole seconds; 0: off)."""

    active_deadline: int = 0
    active_deadline_by_resource: Mapping[str, int] = field(default_factory=dict)
    min_grace: int = 0
    max_grace: int = 0
    tolerations: Tolerations = ()
    tolerations_by_priority_class: Mapping[str, Tolerations] = field(default_factory=dict)
    tolerations_by_resource: Mapping[str, Tolerations] = field(default_factory=dict)
    gang_uniformity_label: str = ""

    @classmethod
    def from_settings(cls, settings: SubmissionSettings) -> Guardrails:
        def seconds(duration: str) -> int:  # validated when the settings were loaded
            return math.ceil(setting_seconds("", duration))

        def plain(tolerations: Iterable[msgspec.Struct]) -> Tolerations:
            return tuple(msgspec.to_builtins(t) for t in tolerations)

        return cls(
            active_deadline=seconds(settings.default_active_deadline),
            active_deadline_by_resource={
                r: seconds(d) for r, d in settings.default_active_deadline_by_resource_request.items()
            },
            # Upstream truncates the grace periods to whole seconds.
            min_grace=int(setting_seconds("", settings.min_termination_grace_period)),
            max_grace=int(setting_seconds("", settings.max_termination_grace_period)),
            tolerations=plain(settings.default_job_tolerations),
            tolerations_by_priority_class={
                pc: plain(t) for pc, t in settings.default_job_tolerations_by_priority_class.items()
            },
            tolerations_by_resource={
                r: plain(t) for r, t in settings.default_job_tolerations_by_resource_request.items()
            },
            gang_uniformity_label=settings.default_gang_node_uniformity_label,
        )

    def violation(self, pod_spec: Mapping[str, Any]) -> tuple[str, str] | None:
        """The first bound the pod spec breaks, as (field, reason); ``None``: none."""
        deadline = pod_spec.get("activeDeadlineSeconds")
        if deadline is not None and not _whole(deadline, 1):
            return "activeDeadlineSeconds", f"must be a whole number of seconds >= 1, got {deadline!r}"
        grace = pod_spec.get("terminationGracePeriodSeconds")
        if grace is None:
            return None
        if not _whole(grace, 0):
            return "terminationGracePeriodSeconds", f"must be a whole number of seconds >= 0, got {grace!r}"
        if grace and (grace < self.min_grace or (self.max_grace and grace > self.max_grace)):
            upper = f"{self.max_grace}" if self.max_grace else "any"
            return (
                "terminationGracePeriodSeconds",
                f"{grace}s is outside [{self.min_grace}, {upper}] seconds "
                "(submission.minTerminationGracePeriod, maxTerminationGracePeriod); "
                "set it in range or omit it",
            )
        return None

    def pod_defaults(
        self,
        pod_spec: Mapping[str, Any],
        priority_class: str,
        container_requests: frozenset[str],
        pod_requests: frozenset[str],
    ) -> dict[str, Any]:
        """The fields to set on the pod spec: only those the defaults change.

        ``container_requests`` are the resources some (main) container requests a non-zero
        amount of, ``pod_requests`` those the pod as a whole does (init containers too), as
        upstream matches deadlines and tolerations respectively.
        """
        changed: dict[str, Any] = {}
        if pod_spec.get("activeDeadlineSeconds") is None:
            matching = [s for r, s in self.active_deadline_by_resource.items() if r in container_requests]
            deadline = max(matching, default=0) or self.active_deadline
            if deadline:
                changed["activeDeadlineSeconds"] = deadline
        if self.min_grace and not pod_spec.get("terminationGracePeriodSeconds"):
            changed["terminationGracePeriodSeconds"] = self.min_grace
        extra = [*self.tolerations, *self.tolerations_by_priority_class.get(priority_class, ())]
        for resource, tolerations in self.tolerations_by_resource.items():
            if resource in pod_requests:
                extra += tolerations
        if extra:
            existing = list(pod_spec.get("tolerations") or [])
            added = [t for i, t in enumerate(extra) if t not in existing and t not in extra[:i]]
            if added:
                changed["tolerations"] = [*existing, *added]
        return changed

    def gang_annotations(self, annotations: Mapping[str, str]) -> dict[str, str] | None:
        """A gang's annotations with the default node uniformity label, when it names none
        (``None``: unchanged; a gang is two or more members, as upstream)."""
        if not self.gang_uniformity_label or GANG_NODE_UNIFORMITY_ANNOTATION in annotations:
            return None
        cardinality = annotations.get(GANG_CARDINALITY_ANNOTATION, "")
        if not annotations.get(GANG_ID_ANNOTATION) or not cardinality.isdigit() or int(cardinality) < 2:
            return None
        return {**annotations, GANG_NODE_UNIFORMITY_ANNOTATION: self.gang_uniformity_label}


def _whole(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= _MAX_SECONDS
