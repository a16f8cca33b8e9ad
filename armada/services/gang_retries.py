"""Gangs retried as one (beyond upstream, whose engine skips gangs: its issue #4683).

When a gang member's failure is retried, the gang runs again as a whole: the other members'
runs end at once as returned with the reason ``gang-member-failed`` (not a failure of
theirs: no budget, no category), every member is requeued, and the scheduler, which places
gangs all-or-nothing, starts them together again. Their executors learn the runs are stale
from the next lease call and kill them. The budget is the gang's: the most retries any member
has been granted. A retry's ``mutate`` applies to every member: each member's memory grows
by the rule, and every member avoids the node the failing member ran on. A gang with a member
already finished cannot run again as a whole; its failures take the legacy path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import gang_rows
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.states import JobState

GANG_MEMBER_FAILED = "gang-member-failed"


@dataclass(frozen=True)
class GangMember:
    job_id: str
    queue: str
    job_set_id: str
    state: JobState
    run_id: str
    cluster: str
    attempts: int
    #: The member's job spec as stored (decoded only when a retry mutates the gang).
    spec: Any = None


async def load_gang(conn: AsyncConnection, queue: str, gang_id: str) -> list[GangMember]:
    return [
        GangMember(
            row.job_id,
            row.queue,
            row.job_set_id,
            JobState(row.state),
            row.latest_run_id or "",
            row.cluster or "",
            row.attempts,
            row.spec,
        )
        for row in await gang_rows(conn, queue, gang_id)
    ]


def restartable(members: list[GangMember]) -> bool:
    """Whether the gang can run again as a whole: no member has finished."""
    return all(not member.state.terminal for member in members)


def restart_others(
    members: list[GangMember],
    failed_job_id: str,
    *,
    retries_used: int,
    why: str,
    mutated: dict[str, Job] | None = None,
) -> tuple[list[ev.Event], set[str]]:
    """Events that stop and requeue every other member, and the runs they stop.

    ``mutated``: members' jobs as the retry's ``mutate`` changed them (carried by their requeue).
    """
    events: list[ev.Event] = []
    stopped: set[str] = set()
    reason = f"{GANG_MEMBER_FAILED}: gang member {failed_job_id} failed ({why}); the gang is retried as one"
    for member in members:
        if member.job_id == failed_job_id:
            continue
        envelope: ev.Envelope = {
            "queue": member.queue,
            "job_set_id": member.job_set_id,
            "job_id": member.job_id,
        }
        if member.state.active and member.run_id:
            stopped.add(member.run_id)
            run_envelope: ev.Envelope = {**envelope, "run_id": member.run_id}
            events.append(
                ev.JobLeaseReturned(
                    **run_envelope,
                    cluster_id=member.cluster,
                    reason=reason,
                    run_attempted=True,
                )
            )
            job = (mutated or {}).get(member.job_id)
            events.append(
                ev.JobQueued(**envelope, attempts=member.attempts, failure_retries=retries_used, job=job)
            )
        # A member still queued waits for the others: the gang is placed all-or-nothing.
    return events, stopped
