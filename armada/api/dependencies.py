"""Litestar dependencies shared by the route modules: the services, the caller, its reads.

Each service of :class:`~armada.api.services.Services` is provided by name with its type,
so a handler declares exactly what it uses (``scheduler: Scheduler``). Besides the
providers here and the request guards (:mod:`.access`, :mod:`.identity`), three route
modules read the access control from ``app.state`` themselves: ``queue_routes`` (who may
change a queue's definition), ``query_routes`` (a watched stream re-checks its caller's
access before each page) and ``sign_in_routes`` (the browser sessions).
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from armada.api.access import AccessControl, identity_of
from armada.api.caller import caller_name, provide_lookout_reads, provide_reads, provide_user
from armada.api.services import services_of
from armada.api.shutdown import ShutdownSignal
from armada.api.stream_quota import StreamQuota
from armada.auth.permissions import GlobalPermission
from armada.eventstore.database import Database
from armada.eventstore.store import EventStore
from armada.lookout.settings import LookoutSettings
from armada.metrics.server import ServerMetrics
from armada.scheduler.leases import LeaseService
from armada.scheduler.loop import SchedulerService
from armada.scheduler.run_events import RunEventIntake
from armada.scheduling.config import SchedulingConfig
from armada.services.forecasts import ForecastService
from armada.services.logs import LogService
from armada.services.pod_policy import QueueSecurityGate
from armada.services.submission import Submitter
from armada.services.visibility import ReadScope


async def provide_database(state: State) -> Database:
    return services_of(state).database


async def provide_store(state: State) -> EventStore:
    return services_of(state).store


async def provide_access(state: State) -> AccessControl:
    return services_of(state).access


async def provide_scheduling(state: State) -> SchedulingConfig:
    return services_of(state).scheduling


async def provide_scheduler(state: State) -> SchedulerService:
    return services_of(state).scheduler


async def provide_forecasts(state: State) -> ForecastService:
    return services_of(state).forecasts


async def provide_leases(state: State) -> LeaseService:
    return services_of(state).leases


async def provide_logs(state: State) -> LogService:
    return services_of(state).logs


async def provide_run_events(state: State) -> RunEventIntake:
    return services_of(state).run_events


async def provide_quota(state: State) -> StreamQuota:
    return services_of(state).streams


async def provide_shutdown(state: State) -> ShutdownSignal:
    return services_of(state).shutdown


async def provide_metrics(state: State) -> ServerMetrics:
    return services_of(state).metrics


async def provide_lookout(state: State) -> LookoutSettings:
    return services_of(state).lookout


async def provide_submitter(request: Request[Any, Any, Any]) -> Submitter:
    """The services a submission uses and the caller, as one dependency: Litestar resolves a
    route's two or more dependencies in an anyio task group per request, which cost 14% of a
    one-job submission's server CPU (docs/performance-notes.md, "Submission")."""
    services = services_of(request.app.state)
    user = caller_name(request)
    return Submitter(services.store, services.submission_rules, user, services.queued_cap, services.forecasts)


async def provide_queue_gate(request: Request[Any, Any, Any], state: State) -> QueueSecurityGate:
    """What this caller may do to queues' security fields (``administer_queue_security``)."""
    services = services_of(state)
    identity = identity_of(request)
    may = identity is not None and services.access.permissions.has(
        identity, GlobalPermission.ADMINISTER_QUEUE_SECURITY
    )
    reserved = services.submission_rules.pod_policy.reserved_namespaces
    return QueueSecurityGate(may_administer=may, reserved_namespaces=reserved)


DEPENDENCIES = {
    "database": Provide(provide_database),
    "store": Provide(provide_store),
    "access": Provide(provide_access),
    "scheduling": Provide(provide_scheduling),
    "scheduler": Provide(provide_scheduler),
    "leases": Provide(provide_leases),
    "forecasts": Provide(provide_forecasts),
    "run_events": Provide(provide_run_events),
    "logs": Provide(provide_logs),
    "quota": Provide(provide_quota),
    "shutdown": Provide(provide_shutdown),
    "metrics": Provide(provide_metrics),
    "lookout": Provide(provide_lookout),
    "user": Provide(provide_user),
    "submitter": Provide(provide_submitter),
    "queue_gate": Provide(provide_queue_gate),
    "reads": Provide(provide_reads),
    "lookout_reads": Provide(provide_lookout_reads),
}

#: Parameter types of route handlers that receive these dependencies by name.
DatabaseDep = NamedDependency[Database]
Store = NamedDependency[EventStore]
Access = NamedDependency[AccessControl]
Scheduling = NamedDependency[SchedulingConfig]
Scheduler = NamedDependency[SchedulerService]
Leases = NamedDependency[LeaseService]
Forecasts = NamedDependency[ForecastService]
RunEvents = NamedDependency[RunEventIntake]
Logs = NamedDependency[LogService]
Quota = NamedDependency[StreamQuota]
Shutdown = NamedDependency[ShutdownSignal]
Metrics = NamedDependency[ServerMetrics]
LookoutConfig = NamedDependency[LookoutSettings]
User = NamedDependency[str]
SubmitterDep = NamedDependency[Submitter]
QueueGate = NamedDependency[QueueSecurityGate]
Reads = NamedDependency[ReadScope]
