"""Litestar dependencies shared by the route modules (store, submission rules, user, reads)."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from armada.api.access import AccessControl, identity_of
from armada.api.identity import provide_lookout_reads, provide_reads, provide_user
from armada.auth.permissions import GlobalPermission
from armada.eventstore.store import EventStore
from armada.scheduling.config import SchedulingConfig
from armada.services.pod_policy import QueueSecurityGate
from armada.services.validation import SubmissionRules
from armada.services.visibility import ReadScope


async def provide_store(state: State) -> EventStore:
    store: EventStore = state.database.store
    return store


async def provide_rules(state: State) -> SubmissionRules:
    rules: SubmissionRules = state.submission_rules
    return rules


async def provide_scheduling(state: State) -> SchedulingConfig:
    scheduling: SchedulingConfig = state.scheduling
    return scheduling


async def provide_queue_gate(request: Request[Any, Any, Any], state: State) -> QueueSecurityGate:
    """What this caller may do to queues' security fields (``administer_queue_security``)."""
    control: AccessControl = state.access
    rules: SubmissionRules = state.submission_rules
    identity = identity_of(request)
    may = identity is not None and control.permissions.has(
        identity, GlobalPermission.ADMINISTER_QUEUE_SECURITY
    )
    return QueueSecurityGate(may_administer=may, reserved_namespaces=rules.pod_policy.reserved_namespaces)


DEPENDENCIES = {
    "store": Provide(provide_store),
    "rules": Provide(provide_rules),
    "scheduling": Provide(provide_scheduling),
    "user": Provide(provide_user),
    "queue_gate": Provide(provide_queue_gate),
    "reads": Provide(provide_reads),
    "lookout_reads": Provide(provide_lookout_reads),
}

#: Parameter types of route handlers that receive these dependencies by name.
Store = NamedDependency[EventStore]
Rules = NamedDependency[SubmissionRules]
Scheduling = NamedDependency[SchedulingConfig]
User = NamedDependency[str]
QueueGate = NamedDependency[QueueSecurityGate]
Reads = NamedDependency[ReadScope]
