"""Job and run states, and how events move a job between them.

The state a job is in is a pure function of its events: the projections and the
scheduler's in-memory job database both use :data:`STATE_AFTER` so they never disagree.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """States of a job, named as in upstream Armada's ``apiJobState``."""

    QUEUED = "QUEUED"
    LEASED = "LEASED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    PREEMPTED = "PREEMPTED"
    UNKNOWN = "UNKNOWN"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_JOB_STATES

    @property
    def active(self) -> bool:
        """Has a run that holds resources on a node."""
        return self in (JobState.LEASED, JobState.PENDING, JobState.RUNNING)


TERMINAL_JOB_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.PREEMPTED})
#: States of jobs that are not finished: waiting in their queue or holding a node.
UNFINISHED_JOB_STATES = (JobState.QUEUED, JobState.LEASED, JobState.PENDING, JobState.RUNNING)


class RunState(StrEnum):
    """States of one attempt (run) of a job on a node."""

    LEASED = "LEASED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    PREEMPTED = "PREEMPTED"
    RETURNED = "RETURNED"
    EXPIRED = "EXPIRED"

    @property
    def active(self) -> bool:
        return self in (RunState.LEASED, RunState.PENDING, RunState.RUNNING)


class FailureCause(StrEnum):
    """Why a job failed, as upstream's ``apiCause`` plus ``LeaseExpired``."""

    ERROR = "Error"
    OOM = "OOM"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    REJECTED = "Rejected"
    EVICTED = "Evicted"
    LEASE_EXPIRED = "LeaseExpired"


#: Job state after an event of the given type; types that do not change it are absent.
STATE_AFTER: dict[str, JobState] = {
    "submitted": JobState.QUEUED,
    "queued": JobState.QUEUED,
    "leased": JobState.LEASED,
    "pending": JobState.PENDING,
    "running": JobState.RUNNING,
    "succeeded": JobState.SUCCEEDED,
    "failed": JobState.FAILED,
    "cancelled": JobState.CANCELLED,
    "preempted": JobState.PREEMPTED,
}

#: Run state after an event of the given type that names a run.
RUN_STATE_AFTER: dict[str, RunState] = {
    "leased": RunState.LEASED,
    "pending": RunState.PENDING,
    "running": RunState.RUNNING,
    "succeeded": RunState.SUCCEEDED,
    "failed": RunState.FAILED,
    "cancelled": RunState.CANCELLED,
    "preempted": RunState.PREEMPTED,
    "leaseReturned": RunState.RETURNED,
    "leaseExpired": RunState.EXPIRED,
}
