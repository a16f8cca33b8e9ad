"""Commands on existing jobs: cancel, cancel a job set, reprioritize, preempt.

Each command reads the jobs it names from the ``jobs`` view and appends its events in one
transaction. Jobs that are already finished are skipped silently (as upstream does): the
response lists the jobs the command was applied to. Jobs holding a node (leased, pending,
running) only get the "-ing" event here; the scheduler service orders the executor to stop
the pod and appends ``cancelled``/``preempted`` once it is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from armada.eventstore import views
from armada.eventstore.store import EventStore, Transaction
from armada.eventstore.views import JobRow
from armada.model.errors import InvalidRequest
from armada.model.events import (
    Event,
    JobCancelled,
    JobCancelling,
    JobPreempting,
    JobReprioritized,
    JobReprioritizing,
)
from armada.model.lifecycle import TERMINAL_JOB_STATES, UNFINISHED_JOB_STATES, JobState
from armada.model.wire.jobs import StateName
from armada.scheduling.config import PriorityClass
from armada.services.validation import check_job_set_id, check_reason

#: Upstream's ``apiJobState`` numbers, for clients that send enums as integers.
UPSTREAM_STATE_NUMBERS = [
    "QUEUED",
    "PENDING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "UNKNOWN",
    "SUBMITTED",
    "LEASED",
    "PREEMPTED",
    "CANCELLED",
    "REJECTED",
]
_ALIASES = {"SUBMITTED": JobState.QUEUED, "REJECTED": JobState.FAILED}


def parse_state(value: StateName, field: str) -> JobState:
    """A job state given by name or by upstream's enum number."""
    name = (
        UPSTREAM_STATE_NUMBERS[value]
        if isinstance(value, int) and 0 <= value < len(UPSTREAM_STATE_NUMBERS)
        else value
    )
    if isinstance(name, str):
        if name in _ALIASES:
            return _ALIASES[name]
        if name in JobState.__members__:
            return JobState[name]
    raise InvalidRequest(f"unknown job state {value!r}", field=field)


async def _jobs_by_id(tx: Transaction, job_ids: Sequence[str], queue: str, job_set_id: str) -> list[JobRow]:
    """The named jobs that exist (and belong to ``queue``/``job_set_id`` when those are given)."""
    if job_set_id:
        check_job_set_id(job_set_id)
    rows = sorted((await views.jobs_by_id(await tx.views(), job_ids)).values())
    return [
        row
        for row in rows
        if (not queue or row.queue == queue) and (not job_set_id or row.job_set_id == job_set_id)
    ]


async def _job_set(tx: Transaction, queue: str, job_set_id: str, states: Iterable[JobState]) -> list[JobRow]:
    if not queue or not job_set_id:
        raise InvalidRequest("name the jobs, or both queue and jobSetId", field="jobSetId")
    check_job_set_id(job_set_id)
    return await views.job_set_rows(await tx.views(), queue, job_set_id, states)


async def _named_or_job_set(
    tx: Transaction,
    job_ids: Sequence[str],
    queue: str,
    job_set_id: str,
    states: Iterable[JobState] = UNFINISHED_JOB_STATES,
) -> list[JobRow]:
    """The named jobs or, if none is named, the job set's jobs in ``states``."""
    if job_ids:
        return await _jobs_by_id(tx, job_ids, queue, job_set_id)
    return await _job_set(tx, queue, job_set_id, states)


def cancel_events(rows: Iterable[JobRow], reason: str, user: str) -> tuple[list[Event], list[str]]:
    """Cancellation of the unfinished ones of ``rows`` (queued jobs end at once); their ids."""
    events: list[Event] = []
    cancelled = []
    for row in rows:
        if row.state in TERMINAL_JOB_STATES:
            continue
        events.append(row.event(JobCancelling, reason=reason, requestor=user))
        if row.state is JobState.QUEUED:
            events.append(row.event(JobCancelled, reason=reason, requestor=user))
        cancelled.append(row.job_id)
    return events, cancelled


async def cancel_jobs(
    store: EventStore, queue: str, job_set_id: str, job_ids: Sequence[str], *, reason: str, user: str
) -> list[str]:
    """Cancel the named jobs (or, if none is named, the whole job set); return those cancelled."""
    check_reason(reason)
    return await _cancel(store, queue, job_set_id, job_ids, UNFINISHED_JOB_STATES, reason=reason, user=user)


async def cancel_job_set(
    store: EventStore, queue: str, job_set_id: str, states: Sequence[StateName], *, reason: str, user: str
) -> list[str]:
    """Cancel the job set's jobs in ``states`` (default: every unfinished job)."""
    check_reason(reason)
    wanted = {parse_state(s, f"filter.states[{i}]") for i, s in enumerate(states)} or set(
        UNFINISHED_JOB_STATES
    )
    return await _cancel(store, queue, job_set_id, (), wanted, reason=reason, user=user)


async def _cancel(
    store: EventStore,
    queue: str,
    job_set_id: str,
    job_ids: Sequence[str],
    states: Iterable[JobState],
    *,
    reason: str,
    user: str,
) -> list[str]:
    async with store.transaction() as tx:
        rows = await _named_or_job_set(tx, job_ids, queue, job_set_id, states)
        events, cancelled = cancel_events(rows, reason, user)
        tx.append(events)
    return cancelled


async def reprioritize_jobs(
    store: EventStore, queue: str, job_set_id: str, job_ids: Sequence[str], *, new_priority: float, user: str
) -> dict[str, str]:
    """Set the priority of the named jobs (or the whole job set); per job ``""`` or why not."""
    if not new_priority >= 0:
        raise InvalidRequest("newPriority must be >= 0", field="newPriority")
    async with store.transaction() as tx:
        rows = await _named_or_job_set(tx, job_ids, queue, job_set_id)
        results = dict.fromkeys(job_ids, "job not found")
        events: list[Event] = []
        for row in rows:
            if row.state in TERMINAL_JOB_STATES:
                results[row.job_id] = f"job is finished ({row.state.value})"
                continue
            events.append(row.event(JobReprioritizing, new_priority=new_priority, requestor=user))
            events.append(row.event(JobReprioritized, new_priority=new_priority, requestor=user))
            results[row.job_id] = ""
        tx.append(events)
    return results


async def preempt_jobs(
    store: EventStore,
    queue: str,
    job_set_id: str,
    job_ids: Sequence[str],
    *,
    reason: str,
    user: str,
    priority_classes: Mapping[str, PriorityClass],
) -> list[str]:
    """Ask for the named running jobs to be preempted; only preemptible priority classes."""
    check_reason(reason)
    if not job_ids:
        raise InvalidRequest("name at least one job to preempt", field="jobIds")
    async with store.transaction() as tx:
        rows = await _jobs_by_id(tx, job_ids, queue, job_set_id)
        for row in rows:
            if row.state in TERMINAL_JOB_STATES:
                continue  # finished: nothing to preempt, whatever its class
            priority_class = priority_classes.get(row.priority_class)
            if priority_class is None or not priority_class.preemptible:
                raise InvalidRequest(
                    f"job {row.job_id} has priority class {row.priority_class!r}, which is not preemptible",
                    field=f"jobIds[{list(job_ids).index(row.job_id)}]",
                )
        active = [row for row in rows if row.state.active]
        tx.append([row.event(JobPreempting, reason=reason, requestor=user) for row in active])
    return [row.job_id for row in active]
