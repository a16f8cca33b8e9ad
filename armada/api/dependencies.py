"""Litestar dependencies shared by the route modules (store, submission rules, user, reads)."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from armada.api.identity import provide_lookout_reads, provide_reads, provide_user
from armada.eventstore.store import EventStore
from armada.scheduling.config import SchedulingConfig
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


DEPENDENCIES = {
    "store": Provide(provide_store),
    "rules": Provide(provide_rules),
    "scheduling": Provide(provide_scheduling),
    "user": Provide(provide_user),
    "reads": Provide(provide_reads),
    "lookout_reads": Provide(provide_lookout_reads),
}

#: Parameter types of route handlers that receive these dependencies by name.
Store = NamedDependency[EventStore]
Rules = NamedDependency[SubmissionRules]
Scheduling = NamedDependency[SchedulingConfig]
User = NamedDependency[str]
Reads = NamedDependency[ReadScope]
