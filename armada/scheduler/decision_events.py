"""A cycle's decisions as events: leases, preemptions and rejections, each re-checked against
its job's row (from the in-memory state the core decided on, or from the views inside the
append when the job changed since), so a job that moved meanwhile is never leased."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from armada.eventstore.views import JobRow
from armada.model import events as ev
from armada.model.ids import new_run_id
from armada.model.lifecycle import FailureCause, JobState
from armada.retries.attempts import run_ended_without_result
from armada.scheduler.cluster_state import ClusterState, split_node_key
from armada.scheduling import SchedulingResult


class Decisions(NamedTuple):
    """A cycle's decisions as events, and the jobs they were checked against."""

    events: list[ev.Event]
    job_ids: list[str]


def rows_in_state(state: ClusterState, job_ids: Sequence[str]) -> dict[str, JobRow]:
    """The jobs as the in-memory state holds them: queued, or holding a run (leased).

    Jobs whose lease is held (not yet in the log) are left out: the previous cycle's
    append changes them, so the re-check rebuilds a decision on them from the views, or
    the lease was not appended and the decision is dropped.
    """
    rows: dict[str, JobRow] = {}
    jobs = state.jobs
    for job_id in job_ids:
        extras = state.extras.get(job_id)
        if extras is None or job_id not in jobs or job_id in state.pending:
            continue  # a held lease has no run yet: a decision on its job is rebuilt or dropped
        held = JobState.QUEUED if jobs.node_of(job_id) is None else JobState.LEASED
        rows[job_id] = JobRow(job_id, extras.queue, extras.job_set_id, held, extras.run_id or "")
    return rows


def decision_events(
    result: SchedulingResult, rows: dict[str, JobRow], state: ClusterState, max_retries: int
) -> list[ev.Event]:
    """The decisions as events, each re-checked against its job's current view row."""
    events: list[ev.Event] = []
    for preemption in result.preemptions:
        row = rows.get(preemption.job_id)
        if row is not None and JobState(row.state).active:
            events += _preemption_events(row, preemption.preempted_by, preemption.reason, state, max_retries)
    for job_id, node_id, pool, executor in zip(
        result.leases.job_ids,
        result.leases.node_ids,
        result.leases.pools,
        result.leases.executors,
        strict=True,
    ):
        row = rows.get(job_id)
        if row is None or row.state != JobState.QUEUED:
            continue
        events.append(
            ev.JobLeased(
                **row.envelope(new_run_id()),
                cluster_id=executor,
                node_id=split_node_key(node_id)[1],
                pool=pool,
            )
        )
    for rejection in result.rejections:
        row = rows.get(rejection.job_id)
        if row is not None and row.state == JobState.QUEUED:
            events.append(
                ev.JobFailed(**row.envelope(), reason=rejection.reason, cause=FailureCause.REJECTED)
            )
    return events


def _preemption_events(
    row: JobRow, preempted_by: str, reason: str, state: ClusterState, max_retries: int
) -> list[ev.Event]:
    extras = state.extras.get(row.job_id)
    text = f"preempted by {preempted_by}: {reason}" if preempted_by else reason
    if extras is not None and extras.retry_on_preemption:
        return run_ended_without_result(
            row.envelope(row.latest_run_id),
            run_attempted=True,
            attempts=extras.attempts,
            max_retries=max_retries,
            reason=text,
        )
    return [ev.JobPreempted(**row.envelope(row.latest_run_id), preempting_job_id=preempted_by, reason=text)]
