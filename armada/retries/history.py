"""A job's retry history, folded from its events: the one read behind every surface.

The log already holds every fact (the runs, each end with its category, the deciding policy
and rule on ``leaseReturned``/``queued``/``failed``, the changed job on ``queued``), so the
history is a fold over a job's events, never a second record that could disagree. REST job
details and the job's scheduler report read it with :func:`retry_histories`; Lookout's
drawer folds the events it has already read with :func:`retry_history`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import job_event_rows
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.lifecycle import FailureCause
from armada.model.quantities import format_units, to_units
from armada.model.retry_engine import retries_granted
from armada.model.retry_mutation import avoided_nodes
from armada.model.wire.retry_history import RetryAttempt, RetryHistory
from armada.retries.engine import LEASE_EXPIRED

#: The event types the history is folded from (the rest of a job's events say nothing of it).
#: ``submitted`` (the whole job) is read only for jobs a retry changed: what it changed is
#: told against the job as submitted.
HISTORY_EVENTS = (
    "queued",
    "leased",
    "leaseReturned",
    "leaseExpired",
    "failed",
    "preempted",
    "cancelled",
    "succeeded",
)


async def retry_histories(
    conn: AsyncConnection, unreadable: UnreadableRecords, job_ids: Collection[str]
) -> dict[str, RetryHistory]:
    """The history of each of ``job_ids`` that has events, in one read of the log (two when
    a retry changed a job)."""
    stored = await decode_log_rows(conn, await job_event_rows(conn, job_ids, HISTORY_EVENTS), unreadable)
    changed = {
        s.event.job_id for s in stored if isinstance(s.event, ev.JobQueued) and s.event.job is not None
    }
    if changed:
        submitted = await job_event_rows(conn, changed, ("submitted",))
        stored = sorted([*stored, *await decode_log_rows(conn, submitted, unreadable)], key=lambda s: s.seq)
    by_job: dict[str, list[ev.Event]] = defaultdict(list)
    for each in stored:
        by_job[each.event.job_id].append(each.event)
    return {job_id: retry_history(events) for job_id, events in by_job.items()}


def retry_history(events: Iterable[ev.Event]) -> RetryHistory:
    """Fold one job's events (oldest first) into its history."""
    attempts: list[RetryAttempt] = []
    queued: list[ev.JobQueued] = []
    spec: Job | None = None
    last: ev.Event | None = None
    for event in events:
        if isinstance(event, ev.JobSubmitted):
            spec = event.job
        elif isinstance(event, ev.JobLeased):
            attempts.append(
                RetryAttempt(
                    attempt=len(attempts) + 1, run_id=event.run_id, node=event.node_id, outcome="running"
                )
            )
        elif isinstance(event, ev.JobQueued):
            queued.append(event)
            if attempts and event.retry_policy:
                if not attempts[-1].decision:  # an expiry: its run's end names no rule
                    _decided(attempts[-1], "Retry", event.retry_policy, event.retry_rule)
                attempts[-1].retries_used = event.failure_retries
            if event.job is not None:
                if attempts and spec is not None:
                    attempts[-1].mutations = _changes(spec, event.job)
                spec = event.job
        else:
            # A job failed for good right at a run's end (a refused expiry, maxRetries reached)
            # names no run: it is that run's end all the same.
            ran = last.run_id if isinstance(last, ev.JobLeaseReturned | ev.JobLeaseExpired) else ""
            _ended(attempts, event, event.run_id or ran, retries_granted(queued))
        last = event
    policy = next((attempt.retry_policy for attempt in reversed(attempts) if attempt.retry_policy), "")
    return RetryHistory(retries_granted=retries_granted(queued), retry_policy=policy, attempts=attempts)


def _ended(attempts: list[RetryAttempt], event: ev.Event, run_id: str, spent: int) -> None:
    """The end of run ``run_id`` (or, for a ``failed`` without a run, the job's end while
    queued); ``spent``: the retry budget spent so far."""
    current = next((a for a in reversed(attempts) if run_id and a.run_id == run_id), None)
    if isinstance(event, ev.JobFailed) and current is None:
        current = RetryAttempt(attempt=len(attempts) + 1, outcome="rejected")
        attempts.append(current)
    if current is None:
        return
    match event:
        case ev.JobLeaseReturned():
            current.outcome = "failed" if event.retry_policy else "returned"
            current.failure_category, current.failure_subcategory = (
                event.failure_category,
                event.failure_subcategory,
            )
            current.reason = event.reason
            if event.retry_policy:
                _decided(current, "Retry", event.retry_policy, event.retry_rule)
        case ev.JobLeaseExpired():
            current.outcome = "expired"
            current.failure_category, current.failure_subcategory = LEASE_EXPIRED
        case ev.JobFailed():
            current.outcome = "failed" if current.run_id else "rejected"
            if event.cause == FailureCause.LEASE_EXPIRED:
                current.outcome = "expired"
            current.failure_category = event.failure_category or current.failure_category
            current.failure_subcategory = event.failure_subcategory or current.failure_subcategory
            current.reason = event.reason
            if event.retry_policy:
                _decided(current, "Fail", event.retry_policy, event.retry_rule)
                current.retries_used = spent
        case ev.JobPreempted():
            current.outcome, current.reason = "preempted", event.reason
        case ev.JobCancelled():
            current.outcome, current.reason = "cancelled", event.reason
        case ev.JobSucceeded():
            current.outcome = "succeeded"


def _decided(attempt: RetryAttempt, decision: str, policy: str, rule: int) -> None:
    attempt.decision, attempt.retry_policy = decision, policy
    attempt.retry_rule = None if rule < 0 else rule


def _changes(before: Job, after: Job) -> list[str]:
    """What a requeue changed in the job, in words (more memory, nodes to avoid)."""
    said: list[str] = []
    memory = [_memory(job) for job in (before, after)]
    if memory[0] != memory[1]:
        said.append(f"memory {memory[0]} -> {memory[1]}")
    avoided = set(avoided_nodes(before))
    added = [node for node in avoided_nodes(after) if node not in avoided]
    if added:
        said.append(f"avoid node {', '.join(added)}")
    return said


def _memory(job: Job) -> str:
    request = job.scheduling_resource_requirements.requests.get("memory")
    return format_units("memory", to_units("memory", request)) if request is not None else "none"
