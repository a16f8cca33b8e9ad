"""Who may change what in an existing queue's definition (``PUT /v1/queue/{name}``).

Holders of ``create_queue`` and the queue's owners may update it, but the fields that
decide who may do what are guarded by the global permissions they amount to, so that no
one can grant more than they hold: ``create_queue`` alone does not make its holder the
admin of every queue, and an owner cannot hand their queue to someone else or open it up.

- owners (``userOwners``/``groupOwners``) hold every verb: changing them takes every
  verb's global permission (``submit_any_jobs`` … ``watch_all_events``);
- ``permissions`` entries grant verbs: adding or removing a grant of a verb takes that
  verb's global permission;
- ``cordoned`` takes ``cordon_queue`` (as the cordon routes do).

Every other field (priority factor, labels, limits) is the queue's own business.
"""

from __future__ import annotations

from armada.auth.identity import Identity
from armada.auth.permissions import VERB_PERMISSION, GlobalPermission, Permissions
from armada.model.errors import PermissionDenied
from armada.model.queues import Queue, QueueVerb


def owns(queue: Queue, identity: Identity) -> bool:
    return identity.name in queue.user_owners or not identity.groups.isdisjoint(queue.group_owners)


def check_queue_change(old: Queue, new: Queue, identity: Identity, permissions: Permissions) -> None:
    """Raise :class:`PermissionDenied` naming the field ``identity`` may not change."""
    if not (permissions.has(identity, GlobalPermission.CREATE_QUEUE) or owns(old, identity)):
        raise PermissionDenied(f"{identity.name} may not update queue {old.name!r}", field="name")
    if set(old.user_owners) != set(new.user_owners) or set(old.group_owners) != set(new.group_owners):
        field = "userOwners" if set(old.user_owners) != set(new.user_owners) else "groupOwners"
        _require(identity, permissions, set(VERB_PERMISSION.values()), field, "change a queue's owners")
    changed = _grants(old) ^ _grants(new)
    if changed:
        needed = {VERB_PERMISSION[verb] for _, verb in changed}
        _require(identity, permissions, needed, "permissions", "change who is granted these verbs")
    if old.cordoned != new.cordoned:
        _require(identity, permissions, {GlobalPermission.CORDON_QUEUE}, "cordoned", "cordon or uncordon")


def _grants(queue: Queue) -> set[tuple[tuple[str, str], QueueVerb]]:
    """(subject, verb) pairs the queue's ``permissions`` grant, order and grouping aside."""
    return {
        ((subject.kind.value, subject.name), verb)
        for grant in queue.permissions
        for subject in grant.subjects
        for verb in grant.verbs
    }


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
