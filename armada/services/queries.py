"""Read-only job queries served from the views: status, details, runs, errors, active queues."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import job_views
from armada.eventstore.store import EventStore
from armada.eventstore.views import utc
from armada.model import events as ev
from armada.model.events import decode_event
from armada.model.jobs import EXTERNAL_JOB_URI_ANNOTATION, decode_job
from armada.model.lifecycle import JobState, RunState
from armada.model.wire.queries import JobDetails, JobRunDetails
from armada.model.wire.retry_history import RetryHistory
from armada.retries.history import retry_histories

#: Run states by upstream's ``apiJobRunState`` names (including its "RUNS_" spelling).
UPSTREAM_RUN_STATES = {
    RunState.LEASED: "RUN_STATE_LEASED",
    RunState.PENDING: "RUN_STATE_PENDING",
    RunState.RUNNING: "RUN_STATE_RUNNING",
    RunState.SUCCEEDED: "RUN_STATE_SUCCEEDED",
    RunState.FAILED: "RUN_STATE_FAILED",
    RunState.PREEMPTED: "RUN_STATE_PREEMPTED",
    RunState.CANCELLED: "RUN_STATE_CANCELLED",
    RunState.EXPIRED: "RUN_STATE_LEASE_EXPIRED",
    RunState.RETURNED: "RUNS_STATE_LEASE_RETURNED",
}


async def job_states(store: EventStore, job_ids: Sequence[str]) -> dict[str, str]:
    """State of each job by name; ``UNKNOWN`` for ids never submitted."""
    found = await store.job_states(job_ids)
    return {job_id: found.get(job_id, JobState.UNKNOWN.value) for job_id in job_ids}


def _run_details(row: Row[Any], addresses: dict[str, dict[int, str]]) -> JobRunDetails:
    return JobRunDetails(
        run_id=row.run_id,
        job_id=row.job_id,
        state=UPSTREAM_RUN_STATES[RunState(row.state)],
        cluster=row.cluster,
        node=row.node,
        leased_ts=utc(row.leased),
        pending_ts=utc(row.pending),
        started_ts=utc(row.started),
        finished_ts=utc(row.finished),
        reason=row.reason or "",
        ingress_addresses=addresses.get(row.run_id, {}),
    )


async def _ingress_addresses(
    store: EventStore, conn: AsyncConnection, job_ids: Collection[str]
) -> dict[str, dict[int, str]]:
    """Each run's exposed addresses by run id, from the jobs' ``ingressInfo`` events."""
    found: dict[str, dict[int, str]] = {}
    for payload in await job_views.ingress_info_payloads(conn, job_ids):
        event = store.unreadable.decode(decode_event, payload, "event", "ingressInfo")
        if isinstance(event, ev.JobIngressInfo):
            found[event.run_id] = event.ingress_addresses
    return found


async def job_details(
    store: EventStore, job_ids: Sequence[str], *, expand_spec: bool, expand_runs: bool
) -> dict[str, JobDetails]:
    """Details of the jobs that exist, with their spec and runs when asked."""
    async with store.engine.connect() as conn:
        rows = await job_views.job_detail_rows(conn, job_ids, with_spec=expand_spec)
        job_runs: dict[str, list[JobRunDetails]] = defaultdict(list)
        histories: dict[str, RetryHistory] = {}
        if expand_runs and rows:
            job_ids = [row.job_id for row in rows]
            addresses = await _ingress_addresses(store, conn, job_ids)
            for run in await job_views.runs_of_jobs(conn, job_ids):
                job_runs[run.job_id].append(_run_details(run, addresses))
            histories = await retry_histories(conn, store.unreadable, job_ids)
    return {
        row.job_id: JobDetails(
            job_id=row.job_id,
            queue=row.queue,
            jobset=row.job_set_id,
            namespace=row.namespace,
            state=row.state,
            submitted_ts=utc(row.submitted),
            last_transition_ts=utc(row.last_transition),
            cancel_ts=utc(row.cancel_ts),
            cancel_reason=row.cancel_reason or "",
            cancel_user=row.cancel_user or "",
            latest_run_id=row.latest_run_id or "",
            job_spec=(
                store.unreadable.decode(decode_job, row.spec, "job", row.job_id, row.job_id)
                if expand_spec
                else None
            ),
            job_runs=job_runs.get(row.job_id, []),
            retry_history=histories.get(row.job_id),
        )
        for row in rows
    }


async def run_details(store: EventStore, run_ids: Sequence[str]) -> dict[str, JobRunDetails]:
    async with store.engine.connect() as conn:
        rows = await job_views.run_rows(conn, run_ids)
        addresses = await _ingress_addresses(store, conn, {row.job_id for row in rows})
    return {row.run_id: _run_details(row, addresses) for row in rows}


async def job_errors(store: EventStore, job_ids: Sequence[str]) -> dict[str, str]:
    """Why each known job failed (``""`` for jobs that have not failed)."""
    async with store.engine.connect() as conn:
        rows = await job_views.job_reasons(conn, job_ids)
    return {row.job_id: (row.reason or "") if row.state == JobState.FAILED.value else "" for row in rows}


async def active_queues(store: EventStore) -> dict[str, list[str]]:
    """Queues with unfinished jobs, by pool; a queued job counts in every known pool."""
    async with store.engine.connect() as conn:
        pools = await job_views.executor_pools(conn) or {"default"}
        queued = await job_views.queues_with_queued_jobs(conn)
        running = await job_views.pools_and_queues_running(conn)
        by_pool: dict[str, set[str]] = {pool: set(queued) for pool in pools}
        for pool, queue in running:
            by_pool.setdefault(pool, set()).add(queue)
    return {pool: sorted(queues) for pool, queues in sorted(by_pool.items()) if queues}


async def jobs_by_external_uri(store: EventStore, queue: str, job_set_id: str, uri: str) -> list[str]:
    """Ids of the job set's jobs submitted with ``externalJobUri`` ``uri`` (kept as an annotation)."""
    if not uri:
        return []
    async with store.engine.connect() as conn:
        rows = await job_views.job_set_annotations(conn, queue, job_set_id)
    return [
        row.job_id
        for row in rows
        if isinstance(row.annotations, dict) and row.annotations.get(EXTERNAL_JOB_URI_ANNOTATION) == uri
    ]
