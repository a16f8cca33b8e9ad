"""Pod admission as kube-apiserver does it, for the API double.

Validation refuses a pod whose name or labels break Kubernetes' rules with 422 Invalid and
``details.causes`` (``pkg/apis/core/validation``); ResourceQuota counts only pods that have
not finished and, until the quota controller has computed a quota's usage, refuses every
create with "status unknown for quota" (``plugin/pkg/admission/resourcequota``); a validating
webhook that denies a pod gives its own message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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


@dataclass
class Admission:
    """What the double admits; tests set quotas, unknown quota status and a webhook."""

    store: Store
    #: Pods per namespace a quota allows (absent: no quota).
    pod_quota: dict[str, int] = field(default_factory=dict)
    #: Namespaces whose quota the quota controller has not computed yet.
    quota_unknown: set[str] = field(default_factory=set)
    #: A validating webhook denying pods carrying this label key, with this message.
    webhook_denies: dict[str, str] = field(default_factory=dict)

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
        if ns in self.quota_unknown:
            raise _forbidden(name, "status unknown for quota: compute-resources, resources: pods")
        limit = self.pod_quota.get(ns)
        if limit is None:
            return
        # Quota counts pods that still hold resources: terminal ones are not charged.
        used = sum(
            1
            for p in self.store.select(Selector("pods", ns))
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
        if used >= limit:
            raise _forbidden(
                name,
                f"exceeded quota: compute-resources, requested: pods=1, used: pods={used}, "
                f"limited: pods={limit}",
            )
