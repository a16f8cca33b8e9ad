"""Pod admission as kube-apiserver does it, for the API double.

Validation refuses a pod whose name or labels break Kubernetes' rules with 422 Invalid and
``details.causes`` (``pkg/apis/core/validation``); a ResourceQuota (``pods``, ``cpu``/
``requests.cpu``, ``memory``/``requests.memory``, ``limits.*``) counts only pods that have
not finished, refuses a pod that would take it over a hard limit with 403 "exceeded quota"
naming what was requested, used and limited, and, until the quota controller has computed
its usage, refuses every create with "status unknown for quota"
(``plugin/pkg/admission/resourcequota``); a validating webhook that denies a pod gives its
own message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from armada.model.quantities import format_units, to_units
from tests.integration.executor.kube_store import ApiError, Obj, Selector, Store

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_NAME_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def label_value_invalid(value: str) -> bool:
    return len(value) > 63 or not _LABEL_VALUE.fullmatch(value)


def _causes(pod: Obj) -> list[Obj]:
    metadata = pod.get("metadata") or {}
    causes = []
    name = str(metadata.get("name") or "")
    if len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        causes.append(_cause("metadata.name", name, _NAME_RULE))
    for value in (metadata.get("labels") or {}).values():
        if label_value_invalid(str(value)):
            causes.append(_cause("metadata.labels", str(value), LABEL_VALUE_RULE))
    return causes


def _cause(path: str, value: str, rule: str) -> Obj:
    return {"reason": "FieldValueInvalid", "message": f'Invalid value: "{value}": {rule}', "field": path}


def _forbidden(name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'pods "{name}" is forbidden: {why}')


def pod_usage(pod: Obj) -> dict[str, int]:
    """What a pod charges to each quota-able resource, in integer units, as the quota's pod
    evaluator counts it: requests under their bare and ``requests.`` names, limits under
    ``limits.``, and 1 for ``pods`` and ``count/pods``."""
    spec = pod.get("spec") or {}
    usage: dict[str, int] = {"pods": 1, "count/pods": 1}
    for kind, prefixes in (("requests", ("", "requests.")), ("limits", ("limits.",))):
        totals: dict[str, int] = {}
        for container in spec.get("containers") or []:
            for name, value in ((container.get("resources") or {}).get(kind) or {}).items():
                totals[name] = totals.get(name, 0) + to_units(name, value)
        for container in spec.get("initContainers") or []:
            for name, value in ((container.get("resources") or {}).get(kind) or {}).items():
                totals[name] = max(totals.get(name, 0), to_units(name, value))
        usage |= {prefix + name: units for name, units in totals.items() for prefix in prefixes}
    return usage


def _resource(name: str) -> str:
    """The resource a quota-able name is about (``requests.cpu`` → ``cpu``)."""
    return name.removeprefix("requests.").removeprefix("limits.")


def _quantity(name: str, units: int) -> str:
    return format_units(_resource(name), units)


def _listed(names: list[str], amounts: dict[str, int]) -> str:
    """``prettyPrint``: ``name=quantity`` pairs, sorted, comma-joined."""
    return ",".join(f"{name}={_quantity(name, amounts.get(name, 0))}" for name in sorted(names))


@dataclass
class Admission:
    """What the double admits. Quotas are ResourceQuota objects in the store (``add_quota``)."""

    store: Store
    #: A validating webhook denying pods carrying this label key, with this message.
    webhook_denies: dict[str, str] = field(default_factory=dict)

    def add_quota(
        self, namespace: str, hard: dict[str, str], *, computed: bool = True, name: str = "compute-resources"
    ) -> None:
        """A ResourceQuota; until the quota controller has ``computed`` its usage (a new quota,
        a restarted controller), it has no ``status.hard`` and every pod create is refused."""
        status = {"hard": dict(hard)} if computed else {}
        quota = {"metadata": {"name": name, "namespace": namespace}, "spec": {"hard": dict(hard)}}
        self.store.put("resourcequotas", quota | {"status": status})

    def admit_pod(self, ns: str, name: str, pod: Obj) -> None:
        causes = _causes(pod)
        if causes:
            detail = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
            message = f'Pod "{name}" is invalid: ' + (f"[{detail}]" if len(causes) > 1 else detail)
            raise ApiError(422, "Invalid", message, {"name": name, "kind": "Pod", "causes": causes})
        labels = (pod.get("metadata") or {}).get("labels") or {}
        for key, message in self.webhook_denies.items():
            if key in labels:
                webhook = 'admission webhook "policy.example.com"'
                raise _forbidden(name, f"{webhook} denied the request: {message}")
        for quota in self.store.select(Selector("resourcequotas", ns)):
            self._charge(name, quota, pod)

    def _charge(self, name: str, quota: Obj, pod: Obj) -> None:
        """Refuse the pod if it would take the quota over a hard limit on what it uses."""
        quota_name = quota["metadata"]["name"]
        hard = quota["spec"]["hard"]
        computed = (quota.get("status") or {}).get("hard") or {}
        unknown = sorted(set(hard) - set(computed))
        if unknown:
            raise _forbidden(name, f"status unknown for quota: {quota_name}, resources: {','.join(unknown)}")
        requested = {k: v for k, v in pod_usage(pod).items() if k in hard}
        used: dict[str, int] = {}
        for other in self.store.select(Selector("pods", quota["metadata"]["namespace"])):
            # Quota counts pods that still hold resources: terminal ones are not charged.
            if (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for key, units in pod_usage(other).items():
                    used[key] = used.get(key, 0) + units
        limits = {key: to_units(_resource(key), value) for key, value in hard.items()}
        exceeded = [k for k, units in requested.items() if used.get(k, 0) + units > limits[k]]
        if exceeded:
            raise _forbidden(
                name,
                f"exceeded quota: {quota_name}, requested: {_listed(exceeded, requested)}, "
                f"used: {_listed(exceeded, used)}, limited: {_listed(exceeded, limits)}",
            )
