"""Queues: the unit of fair sharing. One per team, project or user."""

from __future__ import annotations

import re
from enum import StrEnum

import msgspec

from armada.model.numbers import Fraction, Weight
from armada.model.podsecurity import Profile

#: Queue names: 1-63 characters, letters, digits, ``-``, ``_`` and ``.``, starting and ending
#: with a letter or digit. Small enough to be safe in URLs and metric names, and a valid
#: Kubernetes label value (pods carry their queue's name as one: a name ending in ``-`` would
#: make every pod create a 422).
QUEUE_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


class SubjectKind(StrEnum):
    USER = "User"
    GROUP = "Group"


class QueueVerb(StrEnum):
    SUBMIT = "submit"
    CANCEL = "cancel"
    REPRIORITIZE = "reprioritize"
    PREEMPT = "preempt"
    WATCH = "watch"


class PermissionSubject(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: SubjectKind
    name: str


class QueuePermissions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Grants ``verbs`` on the queue to every subject listed."""

    subjects: list[PermissionSubject] = []
    verbs: list[QueueVerb] = []


class PriorityClassPoolLimits(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    maximum_resource_fraction: dict[str, Fraction] = {}


class PriorityClassLimits(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Caps on the fraction of a pool's resources a queue may hold in one priority class."""

    maximum_resource_fraction: dict[str, Fraction] = {}
    maximum_resource_fraction_by_pool: dict[str, PriorityClassPoolLimits] = {}


class Queue(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """A queue as users define it (upstream ``apiQueue`` field names).

    ``priorityFactor`` is the queue's *weight*: a queue with factor 2 gets twice the fair
    share of a queue with factor 1 (upstream Armada inverts this).
    """

    name: str
    priority_factor: Weight = 1.0
    user_owners: list[str] = []
    group_owners: list[str] = []
    permissions: list[QueuePermissions] = []
    cordoned: bool = False
    labels: dict[str, str] = {}
    resource_limits_by_priority_class_name: dict[str, PriorityClassLimits] = {}
    #: Upstream's deprecated per-resource fractions: accepted and kept, as upstream does, but
    #: not enforced (``resourceLimitsByPriorityClassName`` is what limits a queue).
    resource_limits: dict[str, Fraction] = {}
    #: Namespaces this queue's jobs may run in; empty: the server's ``submission.allowedNamespaces``.
    #: Setting or changing it needs the ``administer_queue_security`` permission.
    allowed_namespaces: list[str] = []
    #: Pod security profile of this queue's jobs; unset: the server's
    #: ``submission.podSecurityProfile``. Setting or changing it needs ``administer_queue_security``.
    pod_security_profile: Profile | None = None
    #: Service accounts this queue's pods may name; empty: ``submission.allowedServiceAccounts``.
    #: Setting or changing it needs ``administer_queue_security``.
    allowed_service_accounts: list[str] = []
    #: Retry policies by name, in precedence order; the first one decides (see docs/retries.md).
    retry_policies: list[str] = []
