"""What ``armada serve --dev`` adds to the server: an in-process executor and a printout of job state changes.

The executor runs jobs as local processes and talks HTTP to this very server, with an
internal token of its own (:func:`dev_executor`). The server listens only once its lifespan
has started: leasing at once would fail, and print a warning at every start, so the
executor waits until the port accepts connections instead.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
from prometheus_client import CollectorRegistry

from armada.api.lifespan import Companion
from armada.auth.secrets import hash_token, new_token
from armada.auth.settings import StaticToken
from armada.eventstore.store import EventStore
from armada.executor.admission import ANY_NAMESPACE
from armada.executor.metrics import ExecutorMetrics
from armada.executor.runner import run_executor
from armada.executor.settings import ExecutorSettings
from armada.services.job_printout import print_job_changes
from armada.settings import Settings

#: Seconds between attempts to connect to the server while it starts.
POLL = 0.05
#: Group of the in-process development executor's internal token; it holds ``execute_jobs``.
DEV_EXECUTOR_GROUP = "armada:dev-executor"


@dataclass(frozen=True)
class DevExecutor:
    """The internal credential the dev executor calls the server with, and what runs beside it."""

    token: StaticToken
    companions: list[Companion]


def dev_executor(settings: Settings) -> DevExecutor:
    """The executor and the job printout of ``armada serve --dev``, with a fresh internal token."""
    token = new_token()
    executor_settings = dev_executor_settings(settings, token)

    async def executor(store: EventStore, registry: CollectorRegistry) -> None:
        await when_listening(
            executor_settings.server_url,
            lambda: run_executor(executor_settings, metrics=ExecutorMetrics(registry)),
        )

    async def job_printout(store: EventStore, registry: CollectorRegistry) -> None:
        await print_job_changes(store)

    internal = StaticToken(
        user="armada-dev-executor",
        token_hash=hash_token(token),
        groups=[DEV_EXECUTOR_GROUP],
        executors=[settings.executor.cluster_id],
    )
    return DevExecutor(internal, [executor, job_printout])


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


async def when_listening(url: str, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` once the server at ``url`` accepts TCP connections."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    while True:
        try:
            _, writer = await asyncio.open_connection(parts.hostname, port)
        except OSError:
            await asyncio.sleep(POLL)
            continue
        writer.close()
        await writer.wait_closed()
        break
    await work()
