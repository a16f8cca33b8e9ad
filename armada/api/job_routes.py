"""Job command endpoints: submit, cancel, cancel a job set, reprioritize, preempt."""

from __future__ import annotations

from litestar import post
from litestar.params import JSONBody

from armada.api.dependencies import Scheduling, Store, SubmitterDep, User
from armada.api.responses import problems
from armada.auth.policy import on_queue
from armada.model.queues import QueueVerb
from armada.model.wire.jobs import (
    CancellationResult,
    JobCancelRequest,
    JobPreemptRequest,
    JobPreemptResponse,
    JobReprioritizeRequest,
    JobReprioritizeResponse,
    JobSetCancelRequest,
    JobSubmitRequest,
    JobSubmitResponse,
)
from armada.services import job_actions

TAGS = ["jobs"]


@post(
    "/v1/job/submit",
    responses=problems(404, 409, 413, 429),
    status_code=200,
    tags=TAGS,
    summary="Submit jobs: all are accepted or none",
    opt=on_queue(QueueVerb.SUBMIT, body="queue"),
)
async def submit(data: JSONBody[JobSubmitRequest], submitter: SubmitterDep) -> JobSubmitResponse:
    return await submitter.submit(data)


@post(
    "/v1/job/cancel",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Cancel jobs (or a job set if none is named)",
    opt=on_queue(QueueVerb.CANCEL, body="queue"),
)
async def cancel(data: JSONBody[JobCancelRequest], store: Store, user: User) -> CancellationResult:
    job_ids = [data.job_id, *data.job_ids] if data.job_id else data.job_ids
    cancelled = await job_actions.cancel_jobs(
        store, data.queue, data.job_set_id, job_ids, reason=data.reason, user=user
    )
    return CancellationResult(cancelled_ids=cancelled)


@post(
    "/v1/jobset/cancel",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Cancel a job set's jobs in the given states",
    opt=on_queue(QueueVerb.CANCEL, body="queue"),
)
async def cancel_job_set(data: JSONBody[JobSetCancelRequest], store: Store, user: User) -> CancellationResult:
    states = data.filter.states if data.filter else []
    cancelled = await job_actions.cancel_job_set(
        store, data.queue, data.job_set_id, states, reason=data.reason, user=user
    )
    return CancellationResult(cancelled_ids=cancelled)


@post(
    "/v1/job/reprioritize",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Change jobs' priority within their queue",
    opt=on_queue(QueueVerb.REPRIORITIZE, body="queue"),
)
async def reprioritize(
    data: JSONBody[JobReprioritizeRequest], store: Store, user: User
) -> JobReprioritizeResponse:
    results = await job_actions.reprioritize_jobs(
        store, data.queue, data.job_set_id, data.job_ids, new_priority=data.new_priority, user=user
    )
    return JobReprioritizeResponse(reprioritization_results=results)


@post(
    "/v1/job/preempt",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Preempt running jobs of preemptible classes",
    opt=on_queue(QueueVerb.PREEMPT, body="queue"),
)
async def preempt(
    data: JSONBody[JobPreemptRequest], store: Store, user: User, scheduling: Scheduling
) -> JobPreemptResponse:
    preempted = await job_actions.preempt_jobs(
        store,
        data.queue,
        data.job_set_id,
        data.job_ids,
        reason=data.reason,
        user=user,
        priority_classes=scheduling.priority_classes,
    )
    return JobPreemptResponse(preempted_ids=preempted)


ROUTES = [submit, cancel, cancel_job_set, reprioritize, preempt]
