"""Who may change what in an existing queue's definition (``PUT /v1/queue/{name}``, gRPC
``UpdateQueue``).

Holders of ``create_queue`` and the queue's owners may update it, but owners may change only
the queue's ``labels``: its weight, limits and retry policies decide the whole cluster's fair
share, so changing them takes ``create_queue`` (upstream's rule for ``UpdateQueue``). A PUT
replaces the whole definition, so an owner's PUT must repeat those fields as they are: one
that leaves out an admin-set cap is a change of that cap, and refused.

The fields that decide who may do what are further guarded by the global permissions they
amount to, so that no one can grant more than they hold: ``create_queue`` alone does not make
its holder the admin of every queue, and an owner cannot hand their queue to someone else or
open it up.

- owners (``userOwners``/``groupOwners``) hold every verb: changing them also takes every
  verb's global permission (``submit_any_jobs`` … ``watch_all_events``);
- ``permissions`` entries grant verbs: adding or removing a grant of a verb also takes that
  verb's global permission;
- ``cordoned`` takes ``cordon_queue`` (as the cordon routes do);
- the pod security fields take ``administer_queue_security``
  (:class:`~armada.services.pod_policy.QueueSecurityGate` judges them).
"""

from __future__ import annotations

import msgspec

from armada.auth.identity import Identity
from armada.auth.permissions import VERB_PERMISSION, GlobalPermission, Permissions
from armada.model.errors import PermissionDenied
from armada.model.queues import Queue, QueueVerb

#: The only fields a queue's owners may change without ``create_queue``.
OWNERS_MAY_CHANGE = frozenset({"labels"})
#: Fields guarded by a permission of their own instead of ``create_queue``.
GUARDED_APART = frozenset(
    {"cordoned", "allowed_namespaces", "pod_security_profile", "allowed_service_accounts"}
)


def owns(queue: Queue, identity: Identity) -> bool:
    return identity.name in queue.user_owners or not identity.groups.isdisjoint(queue.group_owners)


def check_queue_change(old: Queue, new: Queue, identity: Identity, permissions: Permissions) -> None:
    """Raise :class:`PermissionDenied` naming the field ``identity`` may not change."""
    if not (permissions.has(identity, GlobalPermission.CREATE_QUEUE) or owns(old, identity)):
        raise PermissionDenied(f"{identity.name} may not update queue {old.name!r}", field="name")
    changed = changed_fields(old, new)
    for field in changed:
        if field.name not in OWNERS_MAY_CHANGE | GUARDED_APART:
            _require(
                identity,
                permissions,
                {GlobalPermission.CREATE_QUEUE},
                field.encode_name,
                f"change {field.encode_name} (owners may change only labels; a PUT replaces the whole "
                "definition, so repeat the other fields as they are)",
            )
    names = {field.name for field in changed}
    if names & {"user_owners", "group_owners"}:
        where = "userOwners" if "user_owners" in names else "groupOwners"
        _require(identity, permissions, set(VERB_PERMISSION.values()), where, "change a queue's owners")
    if "permissions" in names:
        needed = {VERB_PERMISSION[verb] for _, verb in _grants(old) ^ _grants(new)}
        _require(identity, permissions, needed, "permissions", "change who is granted these verbs")
    if "cordoned" in names:
        _require(identity, permissions, {GlobalPermission.CORDON_QUEUE}, "cordoned", "cordon or uncordon")


def changed_fields(old: Queue, new: Queue) -> list[msgspec.structs.FieldInfo]:
    """The fields whose meaning differs between ``old`` and ``new``, in declaration order
    (owners and grants compared as sets: reordering them changes nothing)."""
    return [
        field
        for field in msgspec.structs.fields(Queue)
        if _meaning(old, field.name) != _meaning(new, field.name)
    ]


def _meaning(queue: Queue, name: str) -> object:
    if name in ("user_owners", "group_owners"):
        return frozenset(getattr(queue, name))
    if name == "permissions":
        return _grants(queue)
    return getattr(queue, name)


def _grants(queue: Queue) -> frozenset[tuple[tuple[str, str], QueueVerb]]:
    """(subject, verb) pairs the queue's ``permissions`` grant, order and grouping aside."""
    return frozenset(
        ((subject.kind.value, subject.name), verb)
        for grant in queue.permissions
        for subject in grant.subjects
        for verb in grant.verbs
    )


def _require(
    identity: Identity, permissions: Permissions, needed: set[GlobalPermission], field: str, what: str
) -> None:
    missing = sorted(p.value for p in needed if not permissions.has(identity, p))
    if missing:
        raise PermissionDenied(
            f"{identity.name} may not {what} without the {', '.join(missing)} permission"
            + ("s" if len(missing) > 1 else ""),
            field=field,
        )
