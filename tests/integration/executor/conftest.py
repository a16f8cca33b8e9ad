from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import msgspec
import pytest

from armada.executor.backend import ClusterBackend
from armada.executor.runner import run_executor
from armada.executor.settings import ExecutorSettings
from armada.model.leases import Lease
from tests.integration.executor.contract_server import ContractServer

RunningExecutor = Callable[..., AbstractAsyncContextManager[asyncio.Task[None]]]


@pytest.fixture
async def server() -> AsyncIterator[ContractServer]:
    server = ContractServer()
    await server.start()
    yield server
    await server.stop()


def fast_settings(server: ContractServer, **overrides: Any) -> ExecutorSettings:
    """Settings that make a test executor poll and retry quickly."""
    base = ExecutorSettings(
        server_url=server.url,
        cluster_id="test-cluster",
        backend="fake",
        lease_wait_seconds=0,
        idle_lease_interval_seconds=0.05,
        min_lease_interval_seconds=0.01,
        retry_initial_seconds=0.01,
        retry_max_seconds=0.1,
        shutdown_flush_seconds=5,
    )
    return msgspec.structs.replace(base, **overrides)


@pytest.fixture
def executor(server: ContractServer) -> RunningExecutor:
    """Run an executor against ``server`` for the duration of an ``async with``."""

    @asynccontextmanager
    async def running(cluster: ClusterBackend | None = None, **overrides: Any) -> AsyncIterator[Any]:
        settings = fast_settings(server, **overrides)
        task = asyncio.create_task(run_executor(settings, backend=cluster))
        try:
            yield task
        finally:
            if task.done():
                task.result()  # surface an executor that crashed
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return running


def lease(run: str, job: str | None = None, argv: list[str] | None = None, **fields: Any) -> Lease:
    """A lease whose only container runs ``argv`` (as ``args``, no command)."""
    return Lease(
        run_id=run,
        job_id=job or f"job-{run}",
        queue=fields.pop("queue", "q"),
        job_set_id="set",
        owner="alice",
        node=fields.pop("node", "test-cluster-node-0"),
        pod_spec=fields.pop(
            "pod_spec", {"containers": [{"name": "main", "image": "busybox", "args": argv or ["true"]}]}
        ),
        **fields,
    )


# The kubernetes backend's fixture, shared by its test modules (imported last: it uses ``lease``).
from tests.integration.executor import kube_backend  # noqa: E402

cluster = kube_backend.cluster
