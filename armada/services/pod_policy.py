"""Per-queue pod security: a queue's policy over the server's defaults, enforced at submit and
guarded when a queue's security fields change.

The rules themselves live in :mod:`armada.model.podsecurity` (pure, shared with the
executor). This module knows queues: a queue may narrow or widen what its jobs may do
(namespaces, profile, service accounts), and because widening it is how one would take
over a cluster, only callers holding ``administer_queue_security`` may change those fields
at all. ``create_queue`` alone must not make anyone a cluster admin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from armada.model.errors import InvalidRequest, PermissionDenied
from armada.model.metadata import check_dns_label
from armada.model.podsecurity import (
    PodPolicy,
    annotation_violation,
    namespace_violation,
    service_account_violation,
)
from armada.model.queues import Queue
from armada.services.validation import ValidItem

#: The queue fields only ``administer_queue_security`` may change: (attribute, wire name).
SECURITY_FIELDS = (
    ("allowed_namespaces", "allowedNamespaces"),
    ("pod_security_profile", "podSecurityProfile"),
    ("allowed_service_accounts", "allowedServiceAccounts"),
)
ADMINISTER = "administer_queue_security"


def queue_policy(queue: Queue, defaults: PodPolicy) -> PodPolicy:
    """The policy ``queue``'s jobs are held to: its own fields where set, else the server's."""
    return PodPolicy(
        profile=queue.pod_security_profile or defaults.profile,
        service_accounts=frozenset(queue.allowed_service_accounts) or defaults.service_accounts,
        namespaces=frozenset(queue.allowed_namespaces) or defaults.namespaces,
        reserved_namespaces=defaults.reserved_namespaces,
        wildcard_tolerations=defaults.wildcard_tolerations,
    )


def check_jobs(valid: Sequence[ValidItem], queue: Queue, defaults: PodPolicy) -> None:
    """Refuse the request (400 naming the field) if any job breaks ``queue``'s policy.

    Per job this is a few lookups: the pod spec's verdict per profile was judged (and
    cached) with the rest of its validation.
    """
    policy = queue_policy(queue, defaults)
    profile, accounts = policy.profile, policy.service_accounts
    namespaces, reserved = policy.namespaces, policy.reserved_namespaces
    for index, (item, pod_spec, info) in enumerate(valid):
        if item.namespace not in namespaces or item.namespace in reserved:
            reason = namespace_violation(item.namespace, namespaces, reserved) or "namespace not allowed"
            raise InvalidRequest(reason, field=f"jobRequestItems[{index}].namespace")
        found = info.security.get(profile)
        if found is None and ("serviceAccountName" in pod_spec or "serviceAccount" in pod_spec):
            found = service_account_violation(pod_spec, profile, accounts)
        if found is not None:
            spec_field = "podSpec" if item.pod_spec is not None else "podSpecs[0]"
            raise InvalidRequest(found.detail, field=f"jobRequestItems[{index}].{spec_field}.{found.path}")
        if item.annotations:
            found = annotation_violation(item.annotations, profile)
            if found is not None:
                raise InvalidRequest(found.detail, field=f"jobRequestItems[{index}].annotations.{found.path}")


@dataclass(frozen=True)
class QueueSecurityGate:
    """What the caller of a queue change may do to the queue's security fields."""

    #: The caller holds ``administer_queue_security``.
    may_administer: bool
    #: Namespaces no queue may list, admin or not (``submission.reservedNamespaces``).
    reserved_namespaces: frozenset[str]

    def check(self, queue: Queue, previous: Queue | None) -> None:
        """Refuse reserved or malformed namespaces (400), and changes without the permission (403).

        ``previous`` is the stored queue (``None`` on create: then any value other than the
        default is a change).
        """
        for index, namespace in enumerate(queue.allowed_namespaces):
            field = f"allowedNamespaces[{index}]"
            check_dns_label(namespace, field)
            if namespace in self.reserved_namespaces:
                raise InvalidRequest(
                    f"namespace {namespace!r} is reserved (Armada's own or the cluster's); "
                    "no queue may run jobs there",
                    field=field,
                )
        if self.may_administer:
            return
        before = previous or Queue(name=queue.name)
        for attribute, wire_name in SECURITY_FIELDS:
            if _comparable(getattr(queue, attribute)) != _comparable(getattr(before, attribute)):
                raise PermissionDenied(
                    f"only callers with the {ADMINISTER} permission may set or change {wire_name}",
                    field=wire_name,
                )


def _comparable(value: object) -> object:
    return sorted(value) if isinstance(value, list) else value
