"""Gangs retried as one (beyond upstream, whose engine skips gangs: its issue #4683).

When a gang member's failure is retried, the gang runs again as a whole: the other members'
runs end at once as returned with the reason ``gang-member-failed`` (not a failure of
theirs: no budget, no category), every member is requeued, and the scheduler, which places
gangs all-or-nothing, starts them together again. Their executors learn the runs are stale
from the next lease call and kill them. The budget is the gang's: the most retries any member
has been granted. A retry's ``mutate`` applies to every member: each member's memory grows
by the rule, and every member avoids the node the failing member ran on. When the engine
refuses a member's retry (a rule says ``Fail``, the gang's budget is spent), every other
unfinished member fails with it. A gang with a member already finished cannot run again as
a whole; its failures take the legacy path.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import gang_rows
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.lifecycle import JobState

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


async def load_gangs(
    conn: AsyncConnection, gangs: Collection[tuple[str, str]]
) -> dict[tuple[str, str], list[GangMember]]:
    """The members of each ``(queue, gang id)`` gang, read in one query (not one per gang)."""
    found: dict[tuple[str, str], list[GangMember]] = {}
    if not gangs:
        return found
    for row in await gang_rows(conn, gangs):
        found.setdefault((row.queue, row.gang_id), []).append(
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
        )
    return found


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
    reason = f"{GANG_MEMBER_FAILED}: gang member {failed_job_id} failed ({why}); the gang is retried as one"
    events: list[ev.Event] = []
    for member, envelope in _others(members, failed_job_id):
        if member.state.active and member.run_id:
            events.append(
                ev.JobLeaseReturned(
                    **_with_run(envelope, member),
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
    return events, _runs(members, failed_job_id)


def fail_others(
    members: list[GangMember], failed_job_id: str, *, why: str
) -> tuple[list[ev.Event], set[str]]:
    """Events that fail every other unfinished member (queued ones too: the gang can never run
    whole again), and the runs they end. A gang is never left running in part."""
    reason = f"{GANG_MEMBER_FAILED}: gang member {failed_job_id} failed ({why}); the gang fails as one"
    events: list[ev.Event] = []
    for member, envelope in _others(members, failed_job_id):
        if member.state.terminal:
            continue
        if member.state.active and member.run_id:
            events.append(
                ev.JobFailed(**_with_run(envelope, member), cluster_id=member.cluster, reason=reason)
            )
        else:
            events.append(ev.JobFailed(**envelope, reason=reason))
    return events, _runs(members, failed_job_id)


def _others(members: list[GangMember], failed_job_id: str) -> list[tuple[GangMember, ev.Envelope]]:
    """The other members, each with its job's envelope."""
    return [
        (member, {"queue": member.queue, "job_set_id": member.job_set_id, "job_id": member.job_id})
        for member in members
        if member.job_id != failed_job_id
    ]


def _runs(members: list[GangMember], failed_job_id: str) -> set[str]:
    """The other members' active runs: ended by the gang's restart or failure."""
    return {m.run_id for m, _ in _others(members, failed_job_id) if m.state.active and m.run_id}


def _with_run(envelope: ev.Envelope, member: GangMember) -> ev.Envelope:
    return {**envelope, "run_id": member.run_id}
