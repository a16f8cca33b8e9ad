"""The permissions model: global permissions held by groups, verbs granted per queue.

A caller may act on a queue when it holds the global permission that covers the verb
**or** the queue grants it the verb: owners (``userOwners``/``groupOwners``) have every
verb, ``permissions`` entries grant theirs to the users and groups they list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

from armada.auth.identity import Identity
from armada.model.queues import Queue, QueueVerb, SubjectKind


class GlobalPermission(StrEnum):
    SUBMIT_ANY_JOBS = "submit_any_jobs"
    CANCEL_ANY_JOBS = "cancel_any_jobs"
    REPRIORITIZE_ANY_JOBS = "reprioritize_any_jobs"
    PREEMPT_ANY_JOBS = "preempt_any_jobs"
    WATCH_ALL_EVENTS = "watch_all_events"
    CREATE_QUEUE = "create_queue"
    DELETE_QUEUE = "delete_queue"
    CORDON_QUEUE = "cordon_queue"
    EXECUTE_JOBS = "execute_jobs"
    VIEW_REPORTS = "view_reports"
    #: Set or change a queue's pod security fields (namespaces, profile, service accounts):
    #: widening them is how one would take over a cluster, so ``create_queue`` is not enough.
    ADMINISTER_QUEUE_SECURITY = "administer_queue_security"
    CREATE_RETRY_POLICY = "create_retry_policy"
    UPDATE_RETRY_POLICY = "update_retry_policy"
    DELETE_RETRY_POLICY = "delete_retry_policy"
    #: Cordon or uncordon an executor, and forget one that is gone (upstream's name).
    UPDATE_EXECUTOR_SETTINGS = "update_executor_settings"
    #: Cordon or uncordon one node (upstream's Binoculars permission).
    CORDON_NODES = "cordon_nodes"


#: The global permission that grants a queue verb on every queue.
VERB_PERMISSION = {
    QueueVerb.SUBMIT: GlobalPermission.SUBMIT_ANY_JOBS,
    QueueVerb.CANCEL: GlobalPermission.CANCEL_ANY_JOBS,
    QueueVerb.REPRIORITIZE: GlobalPermission.REPRIORITIZE_ANY_JOBS,
    QueueVerb.PREEMPT: GlobalPermission.PREEMPT_ANY_JOBS,
    QueueVerb.WATCH: GlobalPermission.WATCH_ALL_EVENTS,
}


class Permissions:
    """Global permissions by group (``auth.permissionGroupMapping``)."""

    def __init__(self, groups_by_permission: Mapping[GlobalPermission, Sequence[str]]) -> None:
        self._groups = {permission: frozenset(groups) for permission, groups in groups_by_permission.items()}

    def has(self, identity: Identity, permission: GlobalPermission) -> bool:
        return not identity.groups.isdisjoint(self._groups.get(permission, ()))

    def of(self, identity: Identity) -> frozenset[GlobalPermission]:
        return frozenset(p for p in GlobalPermission if self.has(identity, p))

    def may(self, identity: Identity, queue: Queue, verb: QueueVerb) -> bool:
        """Whether ``identity`` may ``verb`` on ``queue``: globally or by the queue's grants."""
        return self.has(identity, VERB_PERMISSION[verb]) or queue_grants(queue, identity, verb)


def queue_grants(queue: Queue, identity: Identity, verb: QueueVerb) -> bool:
    if identity.name in queue.user_owners or not identity.groups.isdisjoint(queue.group_owners):
        return True
    for grant in queue.permissions:
        if verb not in grant.verbs:
            continue
        for subject in grant.subjects:
            if subject.kind is SubjectKind.USER and subject.name == identity.name:
                return True
            if subject.kind is SubjectKind.GROUP and subject.name in identity.groups:
                return True
    return False
