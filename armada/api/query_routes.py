"""Job query endpoints and the job-set event stream.

Queries name jobs and runs by id, in any queue: each answers only for those in queues the
caller may read (``reads``), and the rest read exactly as ids that were never submitted.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Request, post
from litestar.params import FromPath, JSONBody
from litestar.response import Stream

from armada.api.access import identity_of
from armada.api.caller import reads_of
from armada.api.dependencies import Forecasts, Quota, Reads, Shutdown, Store
from armada.api.ndjson import NDJSON, ndjson
from armada.api.responses import ndjson_stream, problems
from armada.api.services import services_of
from armada.auth.identity import ANONYMOUS_IDENTITY
from armada.auth.policy import on_queue, watching
from armada.model.errors import HistoryRewound, InvalidRequest, PermissionDenied
from armada.model.lifecycle import JobState
from armada.model.queues import QueueVerb
from armada.model.wire.events import (
    ABORTED,
    PERMISSION_DENIED,
    EventStreamLine,
    JobSetRequest,
    encode_stream_error,
    encode_stream_line,
)
from armada.model.wire.queries import (
    JobDetailsRequest,
    JobDetailsResponse,
    JobErrorsRequest,
    JobErrorsResponse,
    JobRunDetailsRequest,
    JobRunDetailsResponse,
    JobStatusRequest,
    JobStatusResponse,
    JobStatusUsingExternalJobUriRequest,
)
from armada.services import queries, streams

TAGS = ["jobs"]


@post(
    "/v1/job/status",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Job states by id (UNKNOWN if never submitted)",
    opt=watching(),
)
async def job_status(data: JSONBody[JobStatusRequest], request: Request[Any, Any, Any]) -> JobStatusResponse:
    # No dependency (the store is the read scope's): resolving one cost 6% of a status call's
    # server CPU, two a task group whose tasks wait their turn on a busy loop (issue 44's pollers).
    reads = reads_of(request)
    found = await queries.job_states(reads.store, await reads.jobs(data.job_ids))
    unknown = JobState.UNKNOWN.value
    return JobStatusResponse(job_states={job_id: found.get(job_id, unknown) for job_id in data.job_ids})


@post(
    "/v1/job/statusUsingExternalJobUri",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="States of a job set's jobs submitted with an externalJobUri",
    opt=on_queue(QueueVerb.WATCH, body="queue"),
)
async def job_status_by_external_uri(
    data: JSONBody[JobStatusUsingExternalJobUriRequest], store: Store
) -> JobStatusResponse:
    job_ids = await queries.jobs_by_external_uri(store, data.queue, data.jobset, data.external_job_uri)
    return JobStatusResponse(job_states=await queries.job_states(store, job_ids))


@post(
    "/v1/job/details",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Job details, with spec, runs and queued jobs' start-time forecasts when asked",
    opt=watching(),
)
async def job_details(
    data: JSONBody[JobDetailsRequest], store: Store, reads: Reads, forecasts: Forecasts
) -> JobDetailsResponse:
    details = await queries.job_details(
        store,
        await reads.jobs(data.job_ids),
        expand_spec=data.expand_job_spec,
        expand_runs=data.expand_job_run,
    )
    if data.expand_forecast:  # the details hold readable jobs only
        queued = [job_id for job_id, job in details.items() if job.state == JobState.QUEUED.value]
        found = forecasts.view(queued, queued)
        details = {
            job_id: msgspec.structs.replace(job, forecast=found[job_id]) if job_id in found else job
            for job_id, job in details.items()
        }
    return JobDetailsResponse(job_details=details)


@post(
    "/v1/run/details",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Run details by run id",
    opt=watching(),
)
async def run_details(
    data: JSONBody[JobRunDetailsRequest], store: Store, reads: Reads
) -> JobRunDetailsResponse:
    return JobRunDetailsResponse(
        job_run_details=await queries.run_details(store, await reads.runs(data.run_ids))
    )


@post(
    "/v1/job/errors",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Why jobs failed",
    opt=watching(),
)
async def job_errors(data: JSONBody[JobErrorsRequest], store: Store, reads: Reads) -> JobErrorsResponse:
    return JobErrorsResponse(job_errors=await queries.job_errors(store, await reads.jobs(data.job_ids)))


@post(
    "/v1/job-set/{queue:str}/{job_set_id:str}",
    media_type=NDJSON,
    responses=ndjson_stream(EventStreamLine, "One line per event of the job set, oldest first", 404, 429),
    status_code=200,
    tags=["events"],
    summary="A job set's events as NDJSON; with watch=true the stream stays open for new ones "
    "(an error line ends it if the caller may no longer watch the queue)",
    opt=on_queue(QueueVerb.WATCH, path="queue"),
)
async def job_set_events(
    queue: FromPath[str],
    job_set_id: FromPath[str],
    store: Store,
    quota: Quota,
    shutdown: Shutdown,
    request: Request[Any, Any, Any],
    data: JSONBody[JobSetRequest | None] = None,
) -> Stream:
    body = data or JobSetRequest()
    for name, given, expected in (("queue", body.queue, queue), ("id", body.id, job_set_id)):
        if given and given != expected:
            raise InvalidRequest(
                f"the body's {name} {given!r} differs from the path's {expected!r}", field=name
            )
    after = streams.parse_message_id(body.from_message_id)
    await streams.check_target(store, queue, job_set_id, error_if_missing=body.error_if_missing)
    # Re-checked before each page: a stream outlives a withdrawn ``watch`` otherwise.
    access = services_of(request.app.state).access
    identity = identity_of(request) or ANONYMOUS_IDENTITY
    allowed = functools.partial(access.may_on_queue, store, identity, queue, QueueVerb.WATCH)
    pages = streams.job_set_pages(store, queue, job_set_id, after=after, watch=body.watch, allowed=allowed)
    # A watching stream ends as soon as the server stops (its client resumes elsewhere).
    batches = streams.until_stopped(pages, shutdown.unless_stopping if body.watch else None)

    async def lines() -> AsyncIterator[bytes]:
        try:
            # A page's lines go out as one chunk: one send through the middleware and one
            # write a page, not an event (a thousand watchers' streams: issue 44).
            async for page in batches:
                yield b"".join([encode_stream_line(stored.seq, stored.event) for stored in page])
        except PermissionDenied as exc:  # the 200 is sent: the stream ends with an error line
            yield encode_stream_error(PERMISSION_DENIED, exc.detail)
        except HistoryRewound as exc:
            yield encode_stream_error(ABORTED, exc.detail)

    return ndjson(quota.open(request, lines()))


ROUTES = [job_status, job_status_by_external_uri, job_details, run_details, job_errors, job_set_events]
