"""Runs lost without a result: their executor went silent or was forgotten, or their node
was lost. Each ends once (checked against the views in the caller's transaction) and its
job is requeued or failed: by the retry engine for an expiry it decides, else by
``maxRetries`` (:func:`armada.retries.attempts.run_ended_without_result`), fenced off the
node it was lost on as ``avoid_node_labels`` says (:mod:`.retry_avoidance`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from armada.eventstore import views
from armada.eventstore.store import Transaction
from armada.eventstore.unreadable import UnreadableRecords
from armada.model import events as ev
from armada.model.lifecycle import FailureCause
from armada.model.retry_engine import RetryEngineSettings
from armada.retries.attempts import run_ended_without_result
from armada.retries.avoidance import EndedRun, avoiding_jobs
from armada.retries.engine import RetryContext, expiry_events
from armada.scheduler.cluster_state import ClusterState, RunInfo


class LostRun(NamedTuple):
    run: RunInfo
    reason: str
    cause: FailureCause
    #: Ended as an expired lease (a genuine failure: the retry engine may decide it).
    expired: bool


async def end_lost_runs(
    tx: Transaction,
    state: ClusterState,
    lost: Sequence[LostRun],
    *,
    retry_settings: RetryEngineSettings,
    max_retries: int,
    unreadable: UnreadableRecords,
    avoid_node_labels: Sequence[str],
) -> None:
    """Append the end of every lost run that is still its job's active run."""
    conn = await tx.views()
    rows = await views.jobs_by_id(conn, [lost_run.run.job_id for lost_run in lost])
    expired_ids = sorted({lost_run.run.job_id for lost_run in lost if lost_run.expired})
    retry = await RetryContext.load(conn, retry_settings, expired_ids)
    fenced = await avoiding_jobs(
        conn,
        state,
        unreadable,
        [EndedRun(lost_run.run.job_id, lost_run.run.executor, lost_run.run.node) for lost_run in lost],
        avoid_node_labels,
    )
    for run, reason, cause, expired in lost:
        row = rows.get(run.job_id)
        if row is None or row.latest_run_id != run.run_id or not row.state.active:
            continue
        extras = state.extras.get(run.job_id)
        attempts = extras.attempts if extras else 0
        decided = expiry_events(retry, row.envelope(), attempts=attempts, reason=reason) if expired else None
        if decided is not None:  # the retry engine's budget decides
            tx.append([ev.JobLeaseExpired(**row.envelope(run.run_id), cluster_id=run.executor), *decided])
            continue
        tx.append(
            run_ended_without_result(
                row.envelope(run.run_id),
                cluster_id=run.executor,
                expired=expired,
                attempts=attempts,
                max_retries=max_retries,
                reason=reason,
                cause=cause,
                job=fenced.get(run.job_id),
            )
        )
