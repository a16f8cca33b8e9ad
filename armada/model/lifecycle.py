"""The lifecycle of jobs and runs: their states and every move between them, in one place.

A job's state and a run's state are pure functions of their events. :data:`JOB_STATE_AFTER`
and :data:`RUN_STATE_AFTER` say where an event leads; :data:`JOB_MOVES` and
:data:`RUN_MOVES` say which moves are allowed. Executors name their run events as the log
names the job events they become (``pending``, ``running``, ``succeeded``, ``failed``,
``leaseReturned``), so one table serves both. The projections (``eventstore/projections``),
the log checker (``services/invariants``), the scheduler's in-memory state
(``services/cluster_state``), the run-event intake (``services/run_events``) and the
executor's tracker (``executor/tracker``) all consult these tables, so they never disagree.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


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


#: How the executor spells a held run's state on the wire (``LeaseRequest.runs``): the
#: active :class:`RunState` in lower case, or ``terminating`` while it kills the run. Not a
#: :class:`RunState`: ``terminating`` is no state of a run in the log (it stays running until
#: its end is reported), :class:`RunState`'s upper-case values are what the views store and
#: the APIs show, and executors of the previous release send and read these strings.
#: :data:`PHASE_STATE` maps one to the other.
RunPhase = Literal["leased", "pending", "running", "terminating"]


class FailureCause(StrEnum):
    """Why a job failed, as upstream's ``apiCause`` plus ``LeaseExpired``."""

    ERROR = "Error"
    OOM = "OOM"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    REJECTED = "Rejected"
    EVICTED = "Evicted"
    LEASE_EXPIRED = "LeaseExpired"


_ENDED_RUN = frozenset(state for state in RunState if not state.active)

#: Every move a run may make: only forward (leased → pending → running → ended); an ended
#: run moves no more. A move may skip states (a short job is seen succeeded while leased).
RUN_MOVES: dict[RunState, frozenset[RunState]] = {
    RunState.LEASED: frozenset({RunState.PENDING, RunState.RUNNING}) | _ENDED_RUN,
    RunState.PENDING: frozenset({RunState.RUNNING}) | _ENDED_RUN,
    RunState.RUNNING: _ENDED_RUN,
    **{state: frozenset() for state in _ENDED_RUN},
}

#: Every move a job may make: forward with its run, back to its queue when the run ends
#: without a result (returned, expired, a retry), to an end from any unfinished state; a
#: finished job moves no more.
JOB_MOVES: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.QUEUED, JobState.LEASED}) | TERMINAL_JOB_STATES,
    JobState.LEASED: frozenset({JobState.QUEUED, JobState.PENDING, JobState.RUNNING}) | TERMINAL_JOB_STATES,
    JobState.PENDING: frozenset({JobState.QUEUED, JobState.RUNNING}) | TERMINAL_JOB_STATES,
    JobState.RUNNING: frozenset({JobState.QUEUED}) | TERMINAL_JOB_STATES,
    JobState.UNKNOWN: frozenset(),
    **{state: frozenset() for state in TERMINAL_JOB_STATES},
}

#: Job state after an event of the given type; types that do not change it are absent.
JOB_STATE_AFTER: dict[str, JobState] = {
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

#: Run state after an event of the given type that names a run (a log event, or the
#: executor's run event of the same name).
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

#: The run state each wire phase stands for (``terminating`` stands for none: the executor
#: is ending the run and reports nothing more of it).
PHASE_STATE: dict[RunPhase, RunState] = {
    "leased": RunState.LEASED,
    "pending": RunState.PENDING,
    "running": RunState.RUNNING,
}


def run_moves(current: RunState, to: RunState) -> bool:
    """Whether a run in ``current`` may move to ``to``."""
    return to in RUN_MOVES[current]


def job_moves(current: JobState, to: JobState) -> bool:
    """Whether a job in ``current`` may move to ``to``."""
    return to in JOB_MOVES[current]
