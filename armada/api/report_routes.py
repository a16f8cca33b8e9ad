"""Scheduling reports: "why is my job pending?" for the scheduler, a queue and one job."""

from __future__ import annotations

from litestar import get
from litestar.datastructures import State
from litestar.params import FromPath

from armada.api.dependencies import Store
from armada.auth.permissions import GlobalPermission
from armada.auth.policy import requires
from armada.reports import build
from armada.reports.wire import JobReport, QueueReport, SchedulingReport
from armada.services.scheduler import SchedulerService

TAGS = ["reports"]


def _scheduler(state: State) -> SchedulerService:
    scheduler: SchedulerService = state.scheduler
    return scheduler


@get(
    "/v1/scheduling-report",
    tags=TAGS,
    summary="The last scheduling cycles per pool, newest first",
    opt=requires(GlobalPermission.VIEW_REPORTS),
)
async def scheduling_report(state: State) -> SchedulingReport:
    return build.scheduling_report(_scheduler(state).history)


@get(
    "/v1/queue/{name:str}/scheduler-report",
    tags=TAGS,
    summary="A queue's shares, limits and waiting keys",
    opt=requires(GlobalPermission.VIEW_REPORTS),
)
async def queue_report(name: FromPath[str], state: State) -> QueueReport:
    scheduler = _scheduler(state)
    return build.queue_report(scheduler.state, scheduler.history, name)


@get(
    "/v1/job/{job_id:str}/scheduler-report",
    tags=TAGS,
    summary="Why a job waits, or where it was leased",
    opt=requires(GlobalPermission.VIEW_REPORTS),
)
async def job_report(job_id: FromPath[str], state: State, store: Store) -> JobReport:
    scheduler = _scheduler(state)
    return await build.job_report(store, scheduler.state, scheduler.history, job_id)


ROUTES = [scheduling_report, queue_report, job_report]
