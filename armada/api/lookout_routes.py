"""Lookout: the web UI's JSON API under ``/api/v1`` and the static app it runs in.

The app is plain ES modules and CSS from ``armada/lookout/static`` (no build step). Every
page path (``/``, ``/jobs``, ``/jobsets``) answers with the same shell, so links with
their filters in the query string can be shared and reloaded. ``/api/v1/changes`` is a
server-sent event stream of the log's head: the UI refreshes what it shows when it moves.

The data covers only queues the caller may watch (``lookout_reads``), unless
``auth.openLookout`` opens it to every authenticated caller; a job of another queue is
"not found". The head stream says only that something changed, not what.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from litestar import Request, Response, Router, get, post
from litestar.datastructures import CacheControlHeader
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, JSONBody
from litestar.response import ServerSentEvent, ServerSentEventMessage
from litestar.static_files import create_static_files_router

from armada.api.dependencies import Forecasts, LookoutConfig, Quota, Reads, Scheduler, Shutdown, Store
from armada.auth.policy import authenticated, public, watching
from armada.lookout import STATIC_DIR, detail, grouping, jobs, overview
from armada.lookout.job_templates import fill_templates
from armada.lookout.wire import (
    CountRequest,
    CountResponse,
    GroupJobsRequest,
    GroupJobsResponse,
    GroupsRequest,
    GroupsResponse,
    JobDetail,
    JobsRequest,
    JobsResponse,
    Overview,
)
from armada.model.errors import NotFound

TAGS = ["lookout"]
#: Seconds between two change notifications to one browser: the UI re-reads at most this often.
CHANGE_THROTTLE = 1.0
#: Seconds of silence after which a keep-alive comment is sent (and other replicas' appends noticed).
KEEPALIVE = 15.0
PAGES = ["/", "/jobs", "/jobsets", "/executors", "/usage"]


@post("/api/v1/jobs", status_code=200, tags=TAGS, summary="A filtered, sorted page of jobs", opt=watching())
async def list_jobs(
    data: JSONBody[JobsRequest], store: Store, lookout_reads: Reads, forecasts: Forecasts
) -> JobsResponse:
    page = await jobs.jobs_page(store, data, readable=await lookout_reads.queue_names())
    starts = forecasts.expected_starts([row.job_id for row in page.jobs])  # rows readable by the caller
    for row in page.jobs:
        row.expected_start = starts.get(row.job_id)
    return page


@post(
    "/api/v1/jobCount",
    status_code=200,
    tags=TAGS,
    summary="How many jobs match, up to 10,000",
    opt=watching(),
)
async def count_jobs(data: JSONBody[CountRequest], store: Store, lookout_reads: Reads) -> CountResponse:
    return await jobs.count_jobs(store, data, readable=await lookout_reads.queue_names())


@post(
    "/api/v1/jobGroups",
    status_code=200,
    tags=TAGS,
    summary="Job counts by queue, job set or state",
    opt=watching(),
)
async def job_groups(data: JSONBody[GroupsRequest], store: Store, lookout_reads: Reads) -> GroupsResponse:
    return await jobs.job_groups(store, data, readable=await lookout_reads.queue_names())


@post(
    "/api/v1/groupJobs",
    status_code=200,
    tags=TAGS,
    summary="One level of nested groups: counts and requested resources by any groupable column",
    opt=watching(),
)
async def group_jobs(
    data: JSONBody[GroupJobsRequest], store: Store, lookout_reads: Reads
) -> GroupJobsResponse:
    return await grouping.group_jobs(store, data, readable=await lookout_reads.queue_names())


@get(
    "/api/v1/jobs/{job_id:str}",
    tags=TAGS,
    summary="One job with its spec, runs and events",
    opt=watching(),
)
async def job_detail(
    job_id: FromPath[str], store: Store, lookout_reads: Reads, lookout: LookoutConfig
) -> JobDetail:
    if not await lookout_reads.jobs([job_id]):
        raise NotFound(f"job {job_id!r} does not exist", field="jobId")  # exactly as a missing job
    found = await detail.job_detail(store, job_id)
    fill_templates(lookout, found)
    return found


@get("/api/v1/overview", tags=TAGS, summary="Queues, shares, pools and executors", opt=watching())
async def get_overview(store: Store, scheduler: Scheduler, lookout_reads: Reads) -> Overview:
    found = await overview.overview(
        store, scheduler.shares(), now=datetime.now(UTC), executor_timeout=scheduler.executor_timeout
    )
    if not lookout_reads.everything:
        readable = await lookout_reads.readable(queue.name for queue in found.queues)
        found.queues = [queue for queue in found.queues if queue.name in readable]
    return found


@get(
    "/api/v1/changes",
    tags=TAGS,
    summary="Server-sent events: the log's head, whenever it moves",
    media_type="text/event-stream",  # what the OpenAPI document says the answer is
    opt=authenticated(),
)
async def changes(
    store: Store, shutdown: Shutdown, quota: Quota, request: Request[Any, Any, Any]
) -> ServerSentEvent:

    async def heads() -> AsyncIterator[ServerSentEventMessage]:
        seen = await store.head()
        yield ServerSentEventMessage(event="head", data=str(seen))
        while not shutdown.triggered:
            head = await shutdown.unless_stopping(store.wait_for_change(seen, timeout=KEEPALIVE))
            if head is None:  # the server is stopping: end the stream (the browser reconnects)
                return
            if head <= seen:  # no wake-up: another process may have appended (SQLite has no NOTIFY)
                head = await store.head()
            if head > seen:
                seen = head
                yield ServerSentEventMessage(event="head", data=str(seen))
                await shutdown.unless_stopping(asyncio.sleep(CHANGE_THROTTLE))
            else:
                yield ServerSentEventMessage(comment="keep-alive")

    return ServerSentEvent(quota.open(request, heads()), headers={"Cache-Control": "no-store"})


@get(PAGES, include_in_schema=False, media_type="text/html", opt=public())
async def app_shell() -> Response[bytes]:
    """Every page is the same shell; the app reads the path and query string."""
    return Response((STATIC_DIR / "index.html").read_bytes(), headers={"Cache-Control": "no-cache"})


ROUTES: list[HTTPRouteHandler | Router] = [
    list_jobs,
    count_jobs,
    job_groups,
    group_jobs,
    job_detail,
    get_overview,
    changes,
    app_shell,
    create_static_files_router(
        path="/static",
        directories=[STATIC_DIR],
        include_in_schema=False,
        cache_control=CacheControlHeader(no_cache=True),
        opt=public(),
    ),
]
