"""Scheduling reports: "why is my job pending?" for the scheduler, a queue and one job.

Every replica answers with the leader's latest cycles (stored in the database on
PostgreSQL), whichever replica or worker the request reaches. They need ``view_reports``
and, like every read, cover only queues the caller may read: the scheduler's report leaves
other queues' shares out, a queue's report is refused, and another queue's job reads as one
that does not exist.
"""

from __future__ import annotations

import msgspec
from litestar import get
from litestar.params import FromPath

from armada.api.dependencies import Reads, Scheduler, Store
from armada.auth.permissions import GlobalPermission
from armada.auth.policy import watching
from armada.model.errors import NotFound, PermissionDenied
from armada.reports import build, render
from armada.reports.wire import JobReport, QueueReport, SchedulingReport

TAGS = ["reports"]


@get(
    "/v1/scheduling-report",
    tags=TAGS,
    summary="The last scheduling cycles per pool, newest first",
    opt=watching(also=GlobalPermission.VIEW_REPORTS),
)
async def scheduling_report(scheduler: Scheduler, reads: Reads) -> SchedulingReport:
    report = build.scheduling_report(await scheduler.report_history(), scheduler.state)
    if reads.everything:
        return report
    names = {name for cycle in report.cycles for pool in cycle.pools.values() for name in pool.queues}
    readable = await reads.readable(names)
    for cycle in report.cycles:
        for pool, shown in cycle.pools.items():
            queues = {name: share for name, share in shown.queues.items() if name in readable}
            cycle.pools[pool] = msgspec.structs.replace(shown, queues=queues)
    report.report = render.scheduling(report)
    return report


@get(
    "/v1/queue/{name:str}/scheduler-report",
    tags=TAGS,
    summary="A queue's shares, limits and waiting keys",
    opt=watching(also=GlobalPermission.VIEW_REPORTS),
)
async def queue_report(name: FromPath[str], scheduler: Scheduler, reads: Reads) -> QueueReport:
    report = build.queue_report(
        scheduler.state, await scheduler.report_history(), name
    )  # 404 if it does not exist
    if not await reads.may_read(name):
        raise PermissionDenied(f"you may not watch queue {name!r}", field="name")
    return report


@get(
    "/v1/job/{job_id:str}/scheduler-report",
    tags=TAGS,
    summary="Why a job waits, or where it was leased",
    opt=watching(also=GlobalPermission.VIEW_REPORTS),
)
async def job_report(job_id: FromPath[str], scheduler: Scheduler, store: Store, reads: Reads) -> JobReport:
    if not await reads.jobs([job_id]):
        raise NotFound(f"job {job_id!r} does not exist", field="jobId")  # as build.job_report says it
    return await build.job_report(store, scheduler.state, await scheduler.report_history(), job_id)


ROUTES = [scheduling_report, queue_report, job_report]
