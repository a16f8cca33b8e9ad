"""The server's lifespan: open the database, build the services, run the background ones.

The log follower loads the scheduler's in-memory state before anything is served; the
background services (:func:`background`) then start in the order listed and stop in reverse
on shutdown, the database last. Companions (``armada serve --dev``'s executor and job printout,
wired by :mod:`armada.cli.dev_executor`) run beside the server until it stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import msgspec
import structlog
from litestar import Litestar
from prometheus_client import CollectorRegistry

from armada.api.access import AccessControl
from armada.api.grpc.server import start_grpc, stop_grpc
from armada.api.services import Services
from armada.api.shutdown import ShutdownSignal
from armada.api.stream_quota import StreamQuota
from armada.eventstore.database import Database
from armada.eventstore.log_mailbox import LogMailbox
from armada.eventstore.store import EventStore
from armada.metrics.server import ServerMetrics
from armada.retries.policies import missing_default_policy
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.leader import LeaderElection
from armada.scheduler.leases import LeaseService
from armada.scheduler.loop import SchedulerService
from armada.scheduler.run_events import RunEventIntake
from armada.services.forecasts import ForecastService
from armada.services.logs import LogService
from armada.services.quarantine import Quarantine
from armada.services.queued_cap import QueuedCap
from armada.services.retention import Pruner
from armada.services.validation import SubmissionRules
from armada.settings import Settings
from armada.tasks import Background, cancel_and_wait

#: Work run beside the server for its lifetime, given the store and the metrics registry:
#: started once the services are up, cancelled on shutdown.
Companion = Callable[[EventStore, CollectorRegistry], Coroutine[Any, Any, None]]

log = structlog.get_logger(__name__)


def background(services: Services, pruner: Pruner, settings: Settings) -> list[Background]:
    """The server's background services, in start order (they stop in reverse). Only the
    quarantine starts before them, before the follower's first read: it must hear every
    unreadable record."""
    scheduler = [services.scheduler] if settings.scheduler.enabled else []
    return [services.metrics.loop_lag, services.follower, services.forecasts, *scheduler, pruner]


def _run(stack: AsyncExitStack, service: Background) -> None:
    service.start()
    stack.push_async_callback(service.stop)


def server_lifespan(
    settings: Settings,
    database: Database,
    access: AccessControl,
    metrics: ServerMetrics,
    companions: Sequence[Companion] = (),
) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    """The Litestar lifespan of a server: sets ``app.state.services`` while it runs."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await database.open()
            stack.push_async_callback(database.close)
            if missing := await missing_default_policy(database.store, settings.scheduling.retry_policy):
                log.warning("retry engine default policy missing", problem=missing)
            _run(stack, Quarantine(database.store))  # before the first read: it hears every report
            follower = EventLogFollower(database.store, settings.scheduling)
            await follower.load()
            services = build_services(settings, database, access, metrics, follower)
            # Only the leader prunes: pruning stops when another replica takes over.
            pruner = Pruner(
                database.store, settings.retention, is_leader=lambda: services.scheduler.leader.is_leader
            )
            metrics.attach(database.store, follower, services.scheduler)
            metrics.attach_retention(pruner)
            for service in background(services, pruner, settings):
                _run(stack, service)
            app.state.services = services
            if settings.server.grpc_port:
                grpc_server = await start_grpc(settings.server, services)
                stack.push_async_callback(stop_grpc, grpc_server, settings.server.shutdown_timeout)
            for companion in companions:
                task = asyncio.create_task(companion(database.store, metrics.registry))
                stack.push_async_callback(cancel_and_wait, task)
            yield

    return lifespan


def build_services(
    settings: Settings,
    database: Database,
    access: AccessControl,
    metrics: ServerMetrics,
    follower: EventLogFollower,
) -> Services:
    """Every service the routes use, over one database and one log follower."""
    scheduler = SchedulerService(
        database.store,
        follower,
        LeaderElection(settings.database.url),
        settings.scheduler,
        settings.scheduling,
    )
    mailbox = LogMailbox(database.engine, database.signals)
    return Services(
        database=database,
        access=access,
        shutdown=ShutdownSignal(),
        streams=StreamQuota(settings.server.max_streams_per_caller),
        scheduling=settings.scheduling,
        submission_rules=SubmissionRules.from_settings(settings),
        queued_cap=QueuedCap(settings.submission.max_queued_jobs_per_queue),
        follower=follower,
        scheduler=scheduler,
        forecasts=ForecastService(follower, scheduler, settings.scheduling),
        leases=LeaseService(
            database.store,
            follower,
            settings.scheduler,
            priority_class_name_override=settings.scheduling.priority_class_name_override,
            pool_tolerations={
                pool.name: [msgspec.to_builtins(t) for t in pool.default_tolerations]
                for pool in settings.scheduling.pools
                if pool.default_tolerations
            },
            floating_resources=frozenset(f.name for f in settings.scheduling.floating_resources),
            away_tolerations={
                name: [msgspec.to_builtins(t) for t in settings.scheduling.away_tolerations(name)]
                for name in ["", *settings.scheduling.priority_classes]
                if settings.scheduling.away_tolerations(name)
            },
            mailbox=mailbox,
        ),
        run_events=RunEventIntake(
            database.store, settings.scheduler, settings.scheduling.retry_policy, follower
        ),
        logs=LogService(database.store, mailbox, follower, settings.scheduler),
        metrics=metrics,
        lookout=settings.lookout,
    )
