"""The Litestar application: routes, error handling, and the server's lifespan.

The lifespan opens the database (migrating it), loads the scheduler's in-memory state and
follows the log, starts the scheduler loop (which only acts while this replica leads), the
forecasts, the retention pruner (which only prunes while this replica leads), the gRPC
server when ``server.grpcPort`` is set, and in development mode an in-process executor; all
are stopped in reverse on shutdown.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import msgspec
import structlog
from litestar import Litestar, Router
from litestar.config.cors import CORSConfig
from litestar.openapi import OpenAPIConfig

import armada
from armada.api import (
    executor_routes,
    fleet_routes,
    forecast_routes,
    job_routes,
    log_routes,
    lookout_routes,
    metrics_routes,
    query_routes,
    queue_routes,
    report_routes,
    retry_routes,
    sign_in_routes,
    system,
    usage_routes,
)
from armada.api.access import AccessControl, enforce_access
from armada.api.browser_safety import BrowserSafety
from armada.api.dependencies import DEPENDENCIES
from armada.api.dev_mode import when_listening
from armada.api.grpc.convert import GrpcServices
from armada.api.grpc.server import start_grpc, stop_grpc
from armada.api.guard import hostile_url_guard, reject_hostile_input
from armada.api.problems import EXCEPTION_HANDLERS
from armada.api.services import Services
from armada.api.shutdown import ShutdownSignal
from armada.api.stream_quota import StreamQuota
from armada.auth.bind_address import metrics_public
from armada.auth.permissions import GlobalPermission
from armada.auth.policy import Authenticated, public_if
from armada.auth.secrets import hash_token, new_token
from armada.auth.settings import StaticToken
from armada.eventstore.database import Database
from armada.eventstore.log_mailbox import LogMailbox
from armada.executor.admission import ANY_NAMESPACE
from armada.executor.metrics import ExecutorMetrics
from armada.executor.runner import run_executor
from armada.executor.settings import ExecutorSettings
from armada.metrics.server import ServerMetrics
from armada.retries.policies import missing_default_policy
from armada.scheduler.follower import LogFollower
from armada.scheduler.leader import LeaderElection
from armada.scheduler.leases import LeaseService
from armada.scheduler.loop import SchedulerService
from armada.scheduler.run_events import RunEventIntake
from armada.services.forecasts import ForecastService
from armada.services.job_log import log_job_changes
from armada.services.logs import LogService
from armada.services.quarantine import Quarantine
from armada.services.queued_cap import QueuedCap
from armada.services.retention import Pruner
from armada.services.validation import SubmissionRules
from armada.settings import Settings
from armada.tasks import cancel_and_wait

#: Group of the in-process development executor's internal token; it holds ``execute_jobs``.
DEV_EXECUTOR_GROUP = "armada:dev-executor"

log = structlog.get_logger(__name__)


def dev_executor_settings(settings: Settings, token: str = "") -> ExecutorSettings:
    """The in-process executor of ``armada serve --dev``: local processes, talking HTTP to us.

    Its run-state directory is per server port unless configured, so that two dev servers
    on one machine never adopt (and kill) each other's processes.
    """
    host = "127.0.0.1" if settings.server.host in ("0.0.0.0", "::", "") else settings.server.host
    scheme = "https" if settings.server.tls_cert else "http"
    process = settings.executor.process
    if not process.state_dir:
        state_dir = Path(tempfile.gettempdir()) / f"armada-dev-{settings.server.port}"
        process = msgspec.structs.replace(process, state_dir=str(state_dir))
    return msgspec.structs.replace(
        settings.executor,
        server_url=f"{scheme}://{host}:{settings.server.port}",
        cluster_id=settings.executor.cluster_id,
        backend="process",
        allowed_namespaces=[ANY_NAMESPACE],
        token=token or settings.executor.token,
        process=process,
    )


def access_control(settings: Settings, dev_executor_token: str = "") -> AccessControl:
    """Authentication and permissions; the dev executor gets its own internal token.
    ``auth.publicMetrics`` left unset is decided here, from the address the server binds."""
    auth = msgspec.structs.replace(
        settings.auth, public_metrics=metrics_public(settings.auth, settings.server.host)
    )
    if not dev_executor_token:
        return AccessControl(auth)
    internal = StaticToken(
        user="armada-dev-executor",
        token_hash=hash_token(dev_executor_token),
        groups=[DEV_EXECUTOR_GROUP],
        executors=[settings.executor.cluster_id],
    )
    return AccessControl(
        auth,
        extra_tokens=[internal],
        extra_grants={GlobalPermission.EXECUTE_JOBS: [DEV_EXECUTOR_GROUP]},
    )


def create_app(settings: Settings) -> Litestar:
    database = Database(settings.database.url, pool_size=settings.database.pool_size)
    dev_token = new_token() if settings.server.dev else ""
    access = access_control(settings, dev_token)
    metrics = ServerMetrics()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await database.open()
            stack.push_async_callback(database.close)
            if missing := await missing_default_policy(database.store, settings.scheduling.retry_policy):
                log.warning("retry engine default policy missing", problem=missing)
            quarantine = Quarantine(database.store)  # before the first read: it hears every report
            stack.push_async_callback(quarantine.stop)
            follower = LogFollower(database.store, settings.scheduling)
            await follower.load()
            follower.start()
            stack.push_async_callback(follower.stop)
            scheduler = SchedulerService(
                database.store,
                follower,
                LeaderElection(settings.database.url),
                settings.scheduler,
                settings.scheduling,
            )
            forecasts = ForecastService(follower, scheduler, settings.scheduling)
            forecasts.start()
            stack.push_async_callback(forecasts.stop)
            metrics.attach(database.store, follower, scheduler)
            if settings.scheduler.enabled:
                scheduler.start()
                stack.push_async_callback(scheduler.stop)
            # Only the leader prunes: pruning stops when another replica takes over.
            pruner = Pruner(database.store, settings.retention, is_leader=lambda: scheduler.leader.is_leader)
            metrics.attach_retention(pruner)
            pruner.start()
            stack.push_async_callback(pruner.stop)
            mailbox = LogMailbox(database.engine, database.signals)
            services = Services(
                database=database,
                access=access,
                shutdown=ShutdownSignal(),
                streams=StreamQuota(settings.server.max_streams_per_caller),
                scheduling=settings.scheduling,
                submission_rules=SubmissionRules.from_settings(settings),
                queued_cap=QueuedCap(settings.submission.max_queued_jobs_per_queue),
                follower=follower,
                scheduler=scheduler,
                forecasts=forecasts,
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
                    mailbox=mailbox,
                ),
                run_events=RunEventIntake(
                    database.store, settings.scheduler, settings.scheduling.retry_policy, follower
                ),
                logs=LogService(database.store, mailbox, follower, settings.scheduler),
                metrics=metrics,
            )
            app.state.services = services
            if settings.server.grpc_port:
                grpc_services = GrpcServices(
                    store=database.store,
                    access=access,
                    rules=services.submission_rules,
                    scheduling=settings.scheduling,
                    shutdown=services.shutdown,
                    streams=services.streams,
                    logs=services.logs,
                    queued_cap=services.queued_cap,
                )
                grpc_server = await start_grpc(settings.server, grpc_services)
                stack.push_async_callback(stop_grpc, grpc_server, settings.server.shutdown_timeout)
            if settings.server.dev:
                executor_settings = dev_executor_settings(settings, dev_token)
                executor = when_listening(
                    executor_settings.server_url,
                    lambda: run_executor(executor_settings, metrics=ExecutorMetrics(metrics.registry)),
                )
                stack.push_async_callback(cancel_and_wait, asyncio.create_task(executor))
                stack.push_async_callback(
                    cancel_and_wait, asyncio.create_task(log_job_changes(database.store))
                )
            yield

    return Litestar(
        route_handlers=[
            *system.ROUTES,
            *queue_routes.ROUTES,
            *retry_routes.ROUTES,
            *job_routes.ROUTES,
            *forecast_routes.ROUTES,
            *usage_routes.ROUTES,
            *query_routes.ROUTES,
            *executor_routes.ROUTES,
            *log_routes.ROUTES,
            *fleet_routes.ROUTES,
            *report_routes.ROUTES,
            *metrics_routes.ROUTES,
            *lookout_routes.ROUTES,
            *sign_in_routes.ROUTES,
        ],
        middleware=[metrics.http, BrowserSafety(settings.server.cors_allow_origins)],
        dependencies=DEPENDENCIES,
        guards=[hostile_url_guard, enforce_access],  # in this order: see armada.api.guard
        cors_config=CORSConfig(allow_origins=settings.server.cors_allow_origins)
        if settings.server.cors_allow_origins
        else None,
        lifespan=[lifespan],
        exception_handlers=EXCEPTION_HANDLERS,
        before_request=reject_hostile_input,
        request_max_body_size=settings.server.max_request_bytes,
        openapi_config=OpenAPIConfig(
            title="Armada",
            version=armada.__version__,
            path="/schema",
            openapi_router=Router(
                "/schema",
                route_handlers=[],
                include_in_schema=False,
                opt=public_if("public_schema", Authenticated()),
            ),
        ),
        logging_config=None,
        debug=False,
    )
