"""The services a running server's routes use, built once in the lifespan.

One frozen :class:`Services` holds them all (``app.state.services``): every route gets the
service it needs as a typed dependency (:mod:`armada.api.dependencies`), and the guard
and the HTTP server reach the same object through :func:`services_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from litestar.datastructures import State

if TYPE_CHECKING:  # annotations only: the guard (access.py) reads the services through here
    from armada.api.access import AccessControl
    from armada.api.shutdown import ShutdownSignal
    from armada.api.stream_quota import StreamQuota
    from armada.eventstore.database import Database
    from armada.eventstore.store import EventStore
    from armada.lookout.settings import LookoutSettings
    from armada.metrics.server import ServerMetrics
    from armada.scheduler.follower import EventLogFollower
    from armada.scheduler.leases import LeaseService
    from armada.scheduler.loop import SchedulerService
    from armada.scheduler.run_events import RunEventIntake
    from armada.scheduling.config import SchedulingConfig
    from armada.services.forecasts import ForecastService
    from armada.services.logs import LogService
    from armada.services.queued_cap import QueuedCap
    from armada.services.validation import SubmissionRules


@dataclass(frozen=True)
class Services:
    """Everything the routes use; built in the lifespan, stored as ``app.state.services``."""

    database: Database
    access: AccessControl
    shutdown: ShutdownSignal
    streams: StreamQuota
    scheduling: SchedulingConfig
    submission_rules: SubmissionRules
    queued_cap: QueuedCap
    follower: EventLogFollower
    scheduler: SchedulerService
    forecasts: ForecastService
    leases: LeaseService
    run_events: RunEventIntake
    logs: LogService
    metrics: ServerMetrics
    lookout: LookoutSettings

    @property
    def store(self) -> EventStore:
        return self.database.store


def services_of(state: State) -> Services:
    """The services of the app whose state this is (the lifespan has set them)."""
    services: Services = state.services
    return services
