"""Submission validation: every rule a job must pass before anything is appended.

Validation is pure (no I/O) so that the CLI's ``--dry-run`` runs the same rules as the
server. A failure raises :class:`~armada.model.errors.InvalidRequest` naming the item index
and field; the caller rejects the whole request. Pod specs repeat a lot in real workloads
(and in the benchmark), so the per-pod-spec work is cached by the spec's JSON encoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import msgspec

from armada.model.errors import InvalidRequest
from armada.model.ingress_policy import IngressPolicy
from armada.model.jobs import (
    EXTERNAL_JOB_URI_ANNOTATION,
    GANG_CARDINALITY_ANNOTATION,
    GANG_ID_ANNOTATION,
    GANG_NODE_UNIFORMITY_ANNOTATION,
    JOB_SET_ANNOTATION,
    OWNER_ANNOTATION,
    SCHEDULER_NAMES,
    ResourceRequirements,
)
from armada.model.metadata import check_annotations, check_dns_label, check_labels, check_printable
from armada.model.podsecurity import PodPolicy, Profile, Violation, profile_violation, toleration_violation
from armada.model.quantities import QuantityError, format_units, to_units
from armada.model.wire.jobs import JobSubmitRequest, JobSubmitRequestItem
from armada.scheduling.config import PriorityClass, SchedulingConfig
from armada.scheduling.runtimes import EXPECTED_RUNTIME_ANNOTATION, runtime_hint
from armada.services.guardrails import Guardrails
from armada.services.ingress_rules import check_exposed_ports
from armada.services.settings import SubmissionSettings

MAX_JOB_SET_ID_LENGTH = 1023
MAX_CLIENT_ID_LENGTH = 100
#: Gang ids: as long as the database column that holds them.
MAX_NAME_LENGTH = 256
MAX_REASON_BYTES = 50
_CACHE_SIZE = 1024
#: ``privileged`` allows every pod spec: nothing to judge.
_JUDGED_PROFILES = (Profile.BASELINE, Profile.RESTRICTED)
_encoder = msgspec.json.Encoder()


class PodSpecError(Exception):
    """A pod spec rule broken; ``path`` is relative to the pod spec."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(detail)
        self.path = path
        self.detail = detail


class PodSpecInfo(NamedTuple):
    """What Armada derives from a valid pod spec."""

    priority_class_name: str
    requirements: ResourceRequirements
    #: The first rule of each checked pod security profile the spec breaks (``None``: none);
    #: judged once per distinct spec, applied per queue at submit.
    security: Mapping[Profile, Violation | None] = {}
    #: Fields the server's guardrails set on the pod spec (deadline, grace period, tolerations).
    defaults: Mapping[str, Any] = {}


class ValidItem(NamedTuple):
    item: JobSubmitRequestItem
    pod_spec: dict[str, Any]
    info: PodSpecInfo


class SubmissionAreas(Protocol):
    """The settings areas submission rules are built from (the root settings have them)."""

    @property
    def submission(self) -> SubmissionSettings: ...

    @property
    def scheduling(self) -> SchedulingConfig: ...


class SubmissionRules:
    """The configured limits, plus a cache of pod specs already judged."""

    def __init__(
        self,
        priority_classes: Mapping[str, PriorityClass],
        default_priority_class: str,
        min_job_resources: Mapping[str, str],
        max_pod_spec_bytes: int,
        pod_policy: PodPolicy | None = None,
        guardrails: Guardrails | None = None,
        ingress_policy: IngressPolicy | None = None,
    ) -> None:
        #: The server's defaults, for queues that set no security fields of their own.
        self.pod_policy = pod_policy or PodPolicy()
        self.priority_classes = priority_classes
        self.default_priority_class = default_priority_class
        self.min_units = {name: to_units(name, value) for name, value in min_job_resources.items()}
        self.max_pod_spec_bytes = max_pod_spec_bytes
        self.guardrails = guardrails or Guardrails()
        self.ingress_policy = ingress_policy or IngressPolicy()
        self._cache: dict[bytes, PodSpecInfo | PodSpecError] = {}

    @classmethod
    def from_settings(cls, settings: SubmissionAreas) -> SubmissionRules:
        return cls(
            settings.scheduling.priority_classes,
            settings.scheduling.default_priority_class_name,
            settings.submission.min_job_resources,
            settings.submission.max_pod_spec_bytes,
            PodPolicy(
                profile=settings.submission.pod_security_profile,
                service_accounts=frozenset(settings.submission.allowed_service_accounts),
                namespaces=frozenset(settings.submission.allowed_namespaces),
                reserved_namespaces=frozenset(settings.submission.reserved_namespaces),
                wildcard_tolerations=settings.submission.allow_wildcard_tolerations,
            ),
            Guardrails.from_settings(settings.submission),
            settings.submission.ingress_policy,
        )

    def pod_spec_info(self, pod_spec: dict[str, Any]) -> PodSpecInfo:
        """Judge ``pod_spec`` (cached); raises :class:`PodSpecError`."""
        key = _encoder.encode(pod_spec)
        verdict = self._cache.get(key)
        if verdict is None:
            try:
                verdict = self._judge(pod_spec, len(key))
            except PodSpecError as exc:
                verdict = exc
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = verdict
        if isinstance(verdict, PodSpecError):
            raise verdict
        return verdict

    def _judge(self, pod_spec: dict[str, Any], size: int) -> PodSpecInfo:
        if size > self.max_pod_spec_bytes:
            raise PodSpecError(
                "", f"pod spec is {size} bytes as JSON; the limit is {self.max_pod_spec_bytes}"
            )
        name = pod_spec.get("priorityClassName") or self.default_priority_class
        if not isinstance(name, str) or name not in self.priority_classes:
            known = ", ".join(sorted(self.priority_classes))
            raise PodSpecError("priorityClassName", f"unknown priority class {name!r}; known: {known}")
        containers = pod_spec.get("containers")
        if not isinstance(containers, list) or not containers:
            raise PodSpecError("containers", "a pod spec needs at least one container")
        total: dict[str, int] = {}
        for index, container in enumerate(containers):
            for resource, units in _container_requests(container, f"containers[{index}]").items():
                total[resource] = total.get(resource, 0) + units
        requested = frozenset(resource for resource, units in total.items() if units > 0)
        for index, container in enumerate(pod_spec.get("initContainers") or []):
            # Init containers run one at a time: the pod needs the largest of them.
            for resource, units in _container_requests(container, f"initContainers[{index}]").items():
                total[resource] = max(total.get(resource, 0), units)
        for resource, minimum in self.min_units.items():
            if total.get(resource, 0) < minimum:
                raise PodSpecError(
                    "containers",
                    f"the pod requests {format_units(resource, total.get(resource, 0))} of {resource}; "
                    f"the minimum is {format_units(resource, minimum)}",
                )
        broken = self.guardrails.violation(pod_spec)
        if broken is not None:
            raise PodSpecError(*broken)
        if not isinstance(pod_spec.get("tolerations") or [], list):
            raise PodSpecError("tolerations", "tolerations must be a list")
        wildcard = None if self.pod_policy.wildcard_tolerations else toleration_violation(pod_spec)
        if wildcard is not None:  # the job's own: the server's default tolerations come after
            raise PodSpecError(wildcard.path, wildcard.detail)
        quantities = {resource: format_units(resource, units) for resource, units in sorted(total.items())}
        security = {profile: profile_violation(pod_spec, profile) for profile in _JUDGED_PROFILES}
        pod_requests = frozenset(resource for resource, units in total.items() if units > 0)
        defaults = self.guardrails.pod_defaults(pod_spec, name, requested, pod_requests)
        requirements = ResourceRequirements(requests=quantities, limits=dict(quantities))
        return PodSpecInfo(name, requirements, security, defaults)


def _container_requests(container: Any, path: str) -> dict[str, int]:
    """A container's requests in units; its limits must name the same resources, equal."""
    if not isinstance(container, dict):
        raise PodSpecError(path, "a container must be an object")
    resources = container.get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    limits = resources.get("limits") if isinstance(resources, dict) else None
    if not isinstance(requests, dict) or not isinstance(limits, dict) or not requests or not limits:
        raise PodSpecError(f"{path}.resources", "every container needs resource requests and limits")
    if set(requests) != set(limits):
        raise PodSpecError(
            f"{path}.resources",
            f"requests ({', '.join(sorted(requests))}) and limits ({', '.join(sorted(limits))}) "
            "must name the same resources",
        )
    units: dict[str, int] = {}
    for resource, value in requests.items():
        request = _quantity(resource, value, f"{path}.resources.requests.{resource}")
        limit = _quantity(resource, limits[resource], f"{path}.resources.limits.{resource}")
        if request != limit:
            raise PodSpecError(
                f"{path}.resources.limits.{resource}",
                f"limit {limits[resource]} differs from request {value}; limits must equal requests",
            )
        units[resource] = request
    return units


def _quantity(resource: str, value: Any, path: str) -> int:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise PodSpecError(path, f"not a quantity: {value!r}")
    try:
        units = to_units(resource, value)
    except QuantityError as exc:
        raise PodSpecError(path, str(exc)) from exc
    if units < 0:
        raise PodSpecError(path, f"negative quantity {value!r}")
    return units


def check_job_set_id(job_set_id: str, field: str = "jobSetId") -> None:
    """Job set ids may hold any printable text except ``/``: they are a path segment of the
    event-stream URL, where an encoded ``/`` is decoded before routing and cannot match."""
    if not job_set_id or len(job_set_id) > MAX_JOB_SET_ID_LENGTH:
        raise InvalidRequest(f"jobSetId must be 1 to {MAX_JOB_SET_ID_LENGTH} characters long", field=field)
    check_printable(job_set_id, field)
    if "/" in job_set_id:
        raise InvalidRequest("jobSetId must not contain '/'", field=field)


def validate_submission(
    request: JobSubmitRequest, rules: SubmissionRules, owner: str = ""
) -> list[ValidItem]:
    """Check the whole request; return each item with its pod spec and derived facts.

    ``owner`` (who submits) is counted with the annotations each pod gets."""
    check_job_set_id(request.job_set_id)
    if not request.job_request_items:
        raise InvalidRequest("at least one job is needed", field="jobRequestItems")
    # The executor adds these to every pod: they count against Kubernetes' annotation limit.
    added = sum(
        len(text.encode()) for text in (JOB_SET_ANNOTATION, request.job_set_id, OWNER_ANNOTATION, owner)
    )
    valid = [
        _validate_item(index, item, rules, added) for index, item in enumerate(request.job_request_items)
    ]
    _check_gangs(valid)
    return valid


def _validate_item(index: int, item: JobSubmitRequestItem, rules: SubmissionRules, added: int) -> ValidItem:
    where = f"jobRequestItems[{index}]"
    check_dns_label(item.namespace, f"{where}.namespace")
    if len(item.client_id) > MAX_CLIENT_ID_LENGTH:
        raise InvalidRequest(
            f"clientId is longer than {MAX_CLIENT_ID_LENGTH} characters", field=f"{where}.clientId"
        )
    check_printable(item.client_id, f"{where}.clientId")
    check_labels(item.labels, f"{where}.labels")
    check_labels(item.required_node_labels, f"{where}.requiredNodeLabels")
    for number, ingress in enumerate(item.ingress):
        check_annotations(ingress.annotations, f"{where}.ingress[{number}].annotations")
    specs = ([item.pod_spec] if item.pod_spec is not None else []) + item.pod_specs
    if len(specs) != 1:
        raise InvalidRequest(f"exactly one pod spec is needed, got {len(specs)}", field=f"{where}.podSpec")
    spec_field = f"{where}.podSpec" if item.pod_spec is not None else f"{where}.podSpecs[0]"
    item, spec = _upstream_fields(item, specs[0], where)
    try:
        info = rules.pod_spec_info(spec)
    except PodSpecError as exc:
        raise InvalidRequest(exc.detail, field=f"{spec_field}.{exc.path}".rstrip(".")) from exc
    if info.defaults:
        spec = {**spec, **info.defaults}
    annotations = rules.guardrails.gang_annotations(item.annotations)
    if annotations is not None:
        item = msgspec.structs.replace(item, annotations=annotations)
    check_annotations(item.annotations, f"{where}.annotations", added=added)
    _check_gang_annotations(item.annotations, f"{where}.annotations")
    try:
        runtime_hint(item.annotations)
    except ValueError as exc:
        raise InvalidRequest(
            f"expected runtime {exc} (write e.g. 90s, 20m or 1h30m)",
            field=f"{where}.annotations.{EXPECTED_RUNTIME_ANNOTATION}",
        ) from None
    check_exposed_ports(item.services, item.ingress, spec, where, rules.ingress_policy)
    return ValidItem(item, spec, info)


def _upstream_fields(
    item: JobSubmitRequestItem, spec: dict[str, Any], where: str
) -> tuple[JobSubmitRequestItem, dict[str, Any]]:
    """Upstream's item fields in our terms: ``requiredNodeLabels`` joins the node selector,
    ``externalJobUri`` becomes its annotation; ``scheduler`` must name us."""
    if item.scheduler not in SCHEDULER_NAMES:
        raise InvalidRequest(
            f"scheduler {item.scheduler!r} is not this server's (empty or 'armada')",
            field=f"{where}.scheduler",
        )
    if item.required_node_labels:
        selector = spec.get("nodeSelector") or {}
        if not isinstance(selector, dict):
            raise InvalidRequest("nodeSelector must be an object", field=f"{where}.podSpec.nodeSelector")
        spec = {**spec, "nodeSelector": {**selector, **item.required_node_labels}}
    if item.external_job_uri:
        annotations = {**item.annotations, EXTERNAL_JOB_URI_ANNOTATION: item.external_job_uri}
        item = msgspec.structs.replace(item, annotations=annotations)
    return item, spec


def _check_gang_annotations(annotations: Mapping[str, str], where: str) -> None:
    gang_keys = (GANG_ID_ANNOTATION, GANG_CARDINALITY_ANNOTATION, GANG_NODE_UNIFORMITY_ANNOTATION)
    if not any(key in annotations for key in gang_keys):
        return
    gang_id = annotations.get(GANG_ID_ANNOTATION, "")
    if not gang_id or len(gang_id) > MAX_NAME_LENGTH:
        raise InvalidRequest(
            f"a gang job needs a gang id of 1 to {MAX_NAME_LENGTH} characters",
            field=f"{where}.{GANG_ID_ANNOTATION}",
        )
    check_printable(gang_id, f"{where}.{GANG_ID_ANNOTATION}")
    cardinality = annotations.get(GANG_CARDINALITY_ANNOTATION, "")
    if not cardinality.isdigit() or int(cardinality) < 1:
        raise InvalidRequest(
            f"gang cardinality must be an integer >= 1, got {cardinality!r}",
            field=f"{where}.{GANG_CARDINALITY_ANNOTATION}",
        )


def _check_gangs(items: list[ValidItem]) -> None:
    """Members of one gang in a request must agree, and be no more than its cardinality."""
    seen: dict[str, tuple[tuple[str, str, str], int]] = {}
    for index, (item, _, info) in enumerate(items):
        gang_id = item.annotations.get(GANG_ID_ANNOTATION)
        if not gang_id:
            continue
        shape = (
            item.annotations[GANG_CARDINALITY_ANNOTATION],
            item.annotations.get(GANG_NODE_UNIFORMITY_ANNOTATION, ""),
            info.priority_class_name,
        )
        first, count = seen.get(gang_id, (shape, 0))
        if shape != first:
            raise InvalidRequest(
                f"members of gang {gang_id!r} disagree on cardinality, node uniformity label "
                "or priority class",
                field=f"jobRequestItems[{index}].annotations",
            )
        if count + 1 > int(shape[0]):
            raise InvalidRequest(
                f"gang {gang_id!r} has more members than its cardinality {shape[0]}",
                field=f"jobRequestItems[{index}].annotations",
            )
        seen[gang_id] = (first, count + 1)


def check_reason(reason: str) -> None:
    """Cancel and preempt reasons are kept short (they land in every event and view)."""
    if len(reason.encode()) > MAX_REASON_BYTES:
        raise InvalidRequest(f"reason is longer than {MAX_REASON_BYTES} bytes", field="reason")
    check_printable(reason, "reason")
