"""What happens to a job whose run ended without a result: requeue it, or give up.

Runs end without a result when the executor returns the lease, the executor goes silent
(lease expiry), the node is lost, or a job that opted in is preempted. Each such end counts
one attempt; after ``maxRetries`` requeues the job fails with the reason.
"""

from __future__ import annotations

from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.lifecycle import FailureCause


def requeue_or_fail(
    envelope: ev.Envelope,
    *,
    attempts: int,
    max_retries: int,
    reason: str,
    cause: FailureCause = FailureCause.ERROR,
    job: Job | None = None,
) -> list[ev.Event]:
    """``queued`` with one more attempt, or ``failed`` once the retries are used up.

    ``envelope`` holds the job's ``queue``, ``job_set_id`` and ``job_id``; ``job`` is the job
    as it runs from now on when the requeue changes it (nodes to avoid, see
    :mod:`armada.retries.avoidance`).
    """
    if attempts >= max_retries:
        return [
            ev.JobFailed(
                **envelope,
                reason=f"{reason}; gave up after {attempts + 1} attempts (maxRetries {max_retries})",
                cause=cause,
                retryable=False,
            )
        ]
    return [ev.JobQueued(**envelope, attempts=attempts + 1, job=job)]


def run_ended_without_result(
    run: ev.Envelope,
    *,
    attempts: int,
    max_retries: int,
    reason: str,
    cluster_id: str = "",
    run_attempted: bool = False,
    expired: bool = False,
    cause: FailureCause = FailureCause.ERROR,
    job: Job | None = None,
) -> list[ev.Event]:
    """The run's end (lease returned, or ``expired``) and then the job's requeue or failure.

    ``run`` is the run's envelope, ``run_id`` included; the job's events carry none.
    """
    ended: ev.Event = (
        ev.JobLeaseExpired(**run, cluster_id=cluster_id)
        if expired
        else ev.JobLeaseReturned(**run, cluster_id=cluster_id, reason=reason, run_attempted=run_attempted)
    )
    envelope: ev.Envelope = {**run, "run_id": ""}
    return [
        ended,
        *requeue_or_fail(
            envelope, attempts=attempts, max_retries=max_retries, reason=reason, cause=cause, job=job
        ),
    ]
