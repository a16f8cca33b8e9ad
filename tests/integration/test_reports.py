"""Scheduling reports built from a real scheduler service on SQLite and PostgreSQL (in-process).

The end-to-end tests cover the HTTP endpoints and CLI; these cover what the reports say:
limits hit, queue positions, and the states before and between cycles.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from armada.eventstore.database import Database
from armada.metrics.server import ServerMetrics
from armada.model import events as ev
from armada.model.leases import LeaseRequest, NodeReport
from armada.model.queues import PriorityClassLimits, Queue
from armada.reports import build
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.leader import LeaderElection
from armada.scheduler.leases import LeaseService
from armada.scheduler.loop import SchedulerService
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduling import SchedulingConfig
from tests.factories import make_job, submission
from tests.metrics import parse_samples, value

CAPPED = Queue(
    name="capped",
    resource_limits_by_priority_class_name={
        "armada-default": PriorityClassLimits(maximum_resource_fraction={"cpu": 0.25})
    },
)


@pytest.fixture
async def scheduler(database: Database) -> AsyncIterator[SchedulerService]:
    """A scheduler over two 4-CPU nodes, queues ``q`` and ``capped`` (at most 2 CPUs)."""
    config = SchedulingConfig(maximum_scheduling_rate=1e9, maximum_per_queue_scheduling_rate=1e9)
    settings = SchedulerServiceSettings()
    follower = EventLogFollower(database.store, config)
    await follower.load()
    service = SchedulerService(database.store, follower, LeaderElection(database.url), settings, config)
    await database.store.append([ev.QueueCreated(queue=q.name, spec=q) for q in (Queue(name="q"), CAPPED)])
    nodes = [NodeReport(name=f"n{i}", allocatable={"cpu": "4", "memory": "16Gi"}) for i in range(2)]
    await LeaseService(database.store, follower, settings).lease(
        LeaseRequest(executor_id="c1", pool="default", nodes=nodes)
    )
    yield service
    await service.leader.release()


async def cycle(scheduler: SchedulerService) -> None:
    """One cycle, with its decisions applied (as the follower's background task would)."""
    await scheduler.cycle()
    await scheduler.follower.catch_up()


async def submit(database: Database, queue: str, cpu: str, *priorities: float) -> list[str]:
    jobs = [make_job(queue=queue, cpu=cpu, priority=p) for p in priorities]
    await database.store.append([e for job in jobs for e in submission(job)])
    return [job.id for job in jobs]


async def test_a_queue_over_its_limit_says_so(database: Database, scheduler: SchedulerService) -> None:
    *_, third = await submit(database, "capped", "1", 0, 0, 0)
    await cycle(scheduler)
    limit = "queue capped over its armada-default resource limit in pool default"
    report = build.queue_report(scheduler.state, scheduler.history, "capped")
    assert (report.queued, report.limits_hit) == (1, [limit])
    assert report.limits == {"armada-default": {"cpu": 0.25}}
    [key] = report.keys
    assert (key.queued, key.reason, key.requests) == (1, limit, {"cpu": "1", "memory": "1Gi"})
    job = await build.job_report(database.store, scheduler.state, scheduler.history, third)
    assert (job.state, job.position, job.queued_in_queue, job.reason) == ("QUEUED", 1, 1, limit)


async def test_positions_follow_the_queue_order(database: Database, scheduler: SchedulerService) -> None:
    await submit(database, "q", "4", 0, 0)  # fills both nodes
    late, first, middle = await submit(database, "q", "4", 5, 1, 3)
    await cycle(scheduler)
    positions = [
        (await build.job_report(database.store, scheduler.state, scheduler.history, job_id)).position
        for job_id in (first, middle, late)
    ]
    assert positions == [1, 2, 3]
    waiting = await build.job_report(database.store, scheduler.state, scheduler.history, late)
    assert waiting.reason.startswith("no node with 4 cpu free in pool default; 2 nodes match")
    cycles = build.scheduling_report(scheduler.history).cycles
    assert (cycles[0].scheduled, cycles[0].pools["default"].scheduled) == (2, 2)
    assert [(r.reason, r.jobs) for r in cycles[0].top_unschedulable_reasons] == [(waiting.reason, 3)]


async def test_reasons_before_the_first_cycle_and_between_cycles(
    database: Database, scheduler: SchedulerService
) -> None:
    [early] = await submit(database, "q", "1", 0)
    await scheduler.follower.catch_up()
    report = await build.job_report(database.store, scheduler.state, scheduler.history, early)
    assert report.reason == build.NO_CYCLE
    assert build.scheduling_report(scheduler.history).cycles == []
    await cycle(scheduler)
    [late] = await submit(database, "q", "1", 0)
    await scheduler.follower.catch_up()
    leased = await build.job_report(database.store, scheduler.state, scheduler.history, early)
    assert leased.state == "LEASED"
    assert leased.lease is not None
    assert leased.reason == f"leased to cluster c1, node {leased.lease.node}"
    waiting = await build.job_report(database.store, scheduler.state, scheduler.history, late)
    assert waiting.reason == build.NEXT_CYCLE


async def test_fair_share_preemption_is_reported_and_counted(
    database: Database, scheduler: SchedulerService
) -> None:
    metrics = ServerMetrics()
    metrics.attach(database.store, scheduler.follower, scheduler)
    greedy = [
        msgspec.structs.replace(job, pod_spec={**job.pod_spec, "priorityClassName": "armada-preemptible"})
        for job in (make_job(queue="q", cpu="1") for _ in range(8))
    ]
    await database.store.append([e for job in greedy for e in submission(job)])
    await cycle(scheduler)
    await submit(database, "capped", "1", *[0] * 2)
    await cycle(scheduler)
    [latest, *_] = build.scheduling_report(scheduler.history).cycles
    assert latest.preempted == latest.pools["default"].preempted > 0
    text = (await metrics.exposition()).decode()
    preempted = (
        'armada_scheduler_preempted_jobs_total{pool="default",priority_class="armada-preemptible",'
        'queue="q",type="fairshare"}'
    )
    assert f"{preempted} {float(latest.preempted)}" in text
    # The jobs that took the preempted jobs' place were scheduled by fair-share preemption.
    scheduled = (
        'armada_scheduler_scheduled_jobs_total{pool="default",priority_class="armada-default",'
        'queue="capped",type="fairshare"}'
    )
    assert scheduled in text
    samples = parse_samples(text)
    assert value(samples, "armada_scheduler_evicted_jobs", pool="default", queue="q") >= latest.preempted
    assert value(samples, "armada_scheduler_evicted_resources", pool="default", queue="q", resource="cpu") > 0
    assert value(samples, "armada_scheduler_considered_jobs", pool="default", queue="capped") > 0
