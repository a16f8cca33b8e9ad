"""Job submission: validate, deduplicate by client id, append ``submitted`` + ``queued``.

The whole request is one transaction: either every job is accepted or none is. Work is
done per request rather than per job where it can be (one query for client ids), because
submission throughput is bounded by how little happens per job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import job_ids_by_client_id
from armada.eventstore.store import EventStore, Lane, PreparedEvents, Transaction
from armada.model.errors import Conflict, NotFound
from armada.model.events import Event, JobQueued, JobSubmitted
from armada.model.ids import minted_at, new_job_ids
from armada.model.jobs import Job
from armada.model.wire.jobs import JobSubmitRequest, JobSubmitResponse, JobSubmitResponseItem
from armada.services.forecasts import ForecastService
from armada.services.pod_policy import check_jobs
from armada.services.queued_cap import QueuedCap
from armada.services.queues import load_queue
from armada.services.validation import SubmissionRules, ValidItem, validate_submission
from armada.tracing import span

#: Submissions of at most this many jobs take the append lock's prompt lane (see
#: :mod:`armada.eventstore.writelock`); larger ones its bulk lane.
PROMPT_JOBS = 100


async def submit_jobs(
    store: EventStore,
    request: JobSubmitRequest,
    rules: SubmissionRules,
    user: str,
    *,
    queued_cap: QueuedCap | None = None,
    forecasts: ForecastService | None = None,
) -> JobSubmitResponse:
    """Accept every job of ``request`` or none; a repeated ``clientId`` returns the original id.

    ``queued_cap`` (if any) caps the jobs waiting in the queue. A dry run checks the same
    rules, stores nothing and answers when each job would start (with ``forecasts``).
    """
    with span("armada.submit", queue=request.queue, jobs=len(request.job_request_items)):
        valid = validate_submission(request, rules, user)
        if request.dry_run:
            return await _dry_run(store, request, valid, rules, user, forecasts)
        if queued_cap is not None:
            await queued_cap.admit(store, request.queue, len(valid))
        # Everything that needs no database is built before the store's write lock is taken.
        jobs, now = _jobs(request, valid, user)
        job_events = [_events(job, now) for job in jobs]
        # Without client ids every job is stored: serialise it all before taking the lock too.
        dedupe = any(job.client_id for job in jobs)
        prepared = None if dedupe else PreparedEvents([event for pair in job_events for event in pair])
        # A small request goes ahead of queued run reports; a big one (a bulk load) takes its turn
        # with them: were it to overtake them too, jobs would only queue faster than they drain.
        lane = Lane.PROMPT if len(jobs) <= PROMPT_JOBS else Lane.BULK
        async with store.transaction(lane=lane) as tx:
            await _check_queue(await tx.views(jobs=False), store, request, valid, rules)
            if prepared is None:
                job_ids, events = _accept(jobs, job_events, await _known_client_ids(tx, request))
                tx.append(events)
            else:
                job_ids = [job.id for job in jobs]
                tx.append(prepared)
        return JobSubmitResponse(job_response_items=[JobSubmitResponseItem(job_id=i) for i in job_ids])


async def _check_queue(
    conn: AsyncConnection,
    store: EventStore,
    request: JobSubmitRequest,
    valid: list[ValidItem],
    rules: SubmissionRules,
) -> None:
    """The queue exists, takes jobs, and its security policy admits these pods."""
    queue = await load_queue(conn, request.queue, store.unreadable)
    if queue is None:
        raise NotFound(f"queue {request.queue!r} does not exist; create it first", field="queue")
    if queue.cordoned:
        raise Conflict(f"queue {request.queue!r} is cordoned and accepts no jobs", field="queue")
    check_jobs(valid, queue, rules.pod_policy)


async def _dry_run(
    store: EventStore,
    request: JobSubmitRequest,
    valid: list[ValidItem],
    rules: SubmissionRules,
    user: str,
    forecasts: ForecastService | None,
) -> JobSubmitResponse:
    async with store.engine.connect() as conn:
        await _check_queue(conn, store, request, valid, rules)
    jobs, _ = _jobs(request, valid, user)
    found = (await forecasts.if_submitted(jobs)) if forecasts is not None else None
    return JobSubmitResponse(
        job_response_items=[
            JobSubmitResponseItem(job_id="", forecast=found.get(job.id) if found is not None else None)
            for job in jobs
        ]
    )


@dataclass(frozen=True, slots=True)
class Submitter:
    """One caller's way to submit: the store, the rules and the queued cap, bound to who submits."""

    store: EventStore
    rules: SubmissionRules
    user: str
    queued_cap: QueuedCap | None = None
    forecasts: ForecastService | None = None

    async def submit(self, request: JobSubmitRequest) -> JobSubmitResponse:
        return await submit_jobs(
            self.store, request, self.rules, self.user, queued_cap=self.queued_cap, forecasts=self.forecasts
        )


def _accept(
    jobs: list[Job], job_events: list[tuple[JobSubmitted, JobQueued]], known: dict[str, str]
) -> tuple[list[str], list[Event]]:
    """Jobs whose client id is already known keep the original id and are not stored again."""
    job_ids: list[str] = []
    events: list[Event] = []
    for job, pair in zip(jobs, job_events, strict=True):
        original = known.get(job.client_id) if job.client_id else None
        if original is None:
            if job.client_id:
                known[job.client_id] = job.id
            events += pair
        job_ids.append(original or job.id)
    return job_ids, events


async def _known_client_ids(tx: Transaction, request: JobSubmitRequest) -> dict[str, str]:
    """Job ids already given to this request's client ids in this queue (one query)."""
    client_ids = {item.client_id for item in request.job_request_items if item.client_id}
    if not client_ids:
        return {}
    return await job_ids_by_client_id(await tx.views(), request.queue, client_ids)


def _events(job: Job, now: datetime) -> tuple[JobSubmitted, JobQueued]:
    queue, job_set_id = job.queue, job.job_set_id
    return (
        JobSubmitted(job=job, created=now, queue=queue, job_set_id=job_set_id, job_id=job.id),
        JobQueued(created=now, queue=queue, job_set_id=job_set_id, job_id=job.id),
    )


def _jobs(request: JobSubmitRequest, valid: list[ValidItem], user: str) -> tuple[list[Job], datetime]:
    """The request's jobs and their submission time, which lies in their ids' millisecond.

    Lookout bounds a filter on the submission time by the job id too (``armada.lookout.
    minted``): the ids are minted at this time, and after a clock step back, when the id
    counter stays ahead of the clock (:func:`new_job_ids`), the time is the ids' instead.
    """
    now = datetime.now(UTC)
    job_ids = new_job_ids(len(valid), now)
    if job_ids:
        now = max(now, minted_at(job_ids[0]))
    return [
        _job(request, entry, job_id, user, now) for entry, job_id in zip(valid, job_ids, strict=True)
    ], now


def _job(request: JobSubmitRequest, entry: ValidItem, job_id: str, user: str, now: datetime) -> Job:
    item, pod_spec, info = entry
    if "priorityClassName" not in pod_spec:
        pod_spec = {**pod_spec, "priorityClassName": info.priority_class_name}
    return Job(
        id=job_id,
        queue=request.queue,
        job_set_id=request.job_set_id,
        namespace=item.namespace,
        owner=user,
        client_id=item.client_id,
        priority=item.priority,
        priority_class_name=info.priority_class_name,
        labels=item.labels,
        annotations=item.annotations,
        pod_spec=pod_spec,
        created=now,
        scheduling_resource_requirements=info.requirements,
        services=item.services,
        ingress=item.ingress,
    )
