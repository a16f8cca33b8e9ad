"""The server-side scheduler services wired in-process, as ``armada serve`` wires them, with a
controllable clock: the lease protocol's tests drive them call by call (on SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from sqlalchemy import select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.leases import Lease, LeaseRequest, LeaseResponse, NodeReport, RunPhase
from armada.model.queues import Queue
from armada.model.retry_engine import RetryEngineSettings
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.leader import LeaderElection
from armada.scheduler.leases import LeaseService
from armada.scheduler.loop import SchedulerService
from armada.scheduler.run_events import RunEventIntake
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduling import SchedulingConfig
from tests.factories import make_job, submission

#: Executors time out after a minute of silence; a job is retried once.
HARNESS_SETTINGS = SchedulerServiceSettings(executor_timeout=60, max_retries=1)


class Clock:
    def __init__(self) -> None:
        self.now = time.time()  # event timestamps use the wall clock

    def __call__(self) -> float:
        return self.now


class Harness:
    """Server-side services wired as ``armada serve`` wires them, with a controllable clock."""

    def __init__(
        self,
        database: Database,
        retry: RetryEngineSettings | None = None,
        *,
        settings: SchedulerServiceSettings = HARNESS_SETTINGS,
        priority_class_name_override: str | None = None,
    ) -> None:
        self.database = database
        self.clock = Clock()
        self.settings = settings
        config = SchedulingConfig(
            maximum_scheduling_rate=1e9,
            maximum_per_queue_scheduling_rate=1e9,
            retry_policy=retry or RetryEngineSettings(),
        )
        self.follower = EventLogFollower(database.store, config)
        self.scheduler = SchedulerService(
            database.store,
            self.follower,
            LeaderElection(database.url),
            self.settings,
            config,
            clock=self.clock,
        )
        self.leases = LeaseService(
            database.store,
            self.follower,
            self.settings,
            clock=self.clock,
            priority_class_name_override=priority_class_name_override,
        )
        self.intake = RunEventIntake(database.store, self.settings, retry, self.follower)

    async def lease(
        self, executor: str = "c1", runs: list[tuple[str, RunPhase]] | None = None, nodes: int = 2
    ) -> LeaseResponse:
        node_reports = [
            NodeReport(name=f"n{i}", allocatable={"cpu": "4", "memory": "16Gi"}) for i in range(nodes)
        ]
        return await self.leases.lease(
            LeaseRequest(
                executor_id=executor,
                pool="default",
                nodes=node_reports,
                runs=dict(runs or []),
                max_new_leases=100,
            )
        )

    async def job_states(self) -> dict[str, str]:
        async with self.database.engine.connect() as conn:
            return dict((await conn.execute(select(schema.jobs.c.job_id, schema.jobs.c.state))).all())

    async def event_types(self, job_id: str) -> list[str]:
        return [s.event.type for s in await self.database.store.read(0, job_id=job_id)]


@asynccontextmanager
async def started(h: Harness, first: Sequence[ev.Event] | None = None) -> AsyncIterator[Harness]:
    """``h`` following the log in the background, as in the server, once ``first`` (by default
    queue ``q``) is appended; stopped, and its leadership released, on the way out."""
    await h.follower.load()
    h.follower.start()
    await h.database.store.append(first or [ev.QueueCreated(queue="q", spec=Queue(name="q"))])
    try:
        yield h
    finally:
        await h.follower.stop()
        await h.scheduler.leader.release()


async def submit(h: Harness, count: int, cpu: str = "1") -> list[str]:
    jobs = [make_job(queue="q", cpu=cpu, memory="1Gi") for _ in range(count)]
    await h.database.store.append([e for job in jobs for e in submission(job)])
    return [job.id for job in jobs]


async def scheduled(h: Harness) -> list[Lease]:
    """The leases of the queued jobs, once the executor's nodes are known and a cycle ran."""
    await h.lease()
    await h.scheduler.cycle()
    return (await h.lease()).leases


def report(run_id: str, job_id: str, phase: RunPhase = "running") -> tuple[str, RunPhase]:
    """A held run as the executor reports it (the job id only documents the call)."""
    return run_id, phase


async def running(h: Harness) -> tuple[str, Lease, list[tuple[str, RunPhase]]]:
    """One job leased to the known executor and reported running: its id, lease and held runs."""
    await h.lease()
    [job_id] = await submit(h, 1)
    await h.scheduler.cycle()
    [lease] = (await h.lease()).leases
    held = [report(lease.run_id, job_id)]
    await h.lease(runs=held)
    return job_id, lease, held
