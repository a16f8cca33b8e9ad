"""Queue-wide commands: preempt or cancel every matching job of one queue.

Upstream's ``PreemptOnQueue`` and ``CancelOnQueue``; filters are the priority classes, the
pools (of the job's current run: a queued job is in no pool yet) and, for cancel, the job
states. Each command is one transaction appending the same events as the per-job commands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from armada.eventstore import views
from armada.eventstore.store import EventStore
from armada.model.events import JobPreempting
from armada.model.states import UNFINISHED_JOB_STATES, JobState
from armada.model.wire.jobs import StateName
from armada.scheduling.config import PriorityClass
from armada.services.job_actions import cancel_events, parse_state
from armada.services.queues import get_queue

REASON = "queue-wide request"


async def preempt_on_queue(
    store: EventStore,
    queue: str,
    *,
    priority_classes: Sequence[str],
    pools: Sequence[str],
    user: str,
    known_classes: Mapping[str, PriorityClass],
) -> list[str]:
    """Ask for every active job of ``queue`` in a preemptible class (and the filters) to be preempted."""
    await get_queue(store, queue)  # 404 for a queue that does not exist
    active = [JobState.LEASED, JobState.PENDING, JobState.RUNNING]
    async with store.transaction() as tx:
        rows = await views.queue_rows(
            await tx.views(), queue, active, priority_classes=priority_classes, pools=pools
        )
        chosen = [
            row
            for row in rows
            if (pc := known_classes.get(row.priority_class)) is not None and pc.preemptible
        ]
        tx.append([row.event(JobPreempting, reason=REASON, requestor=user) for row in chosen])
    return [row.job_id for row in chosen]


async def cancel_on_queue(
    store: EventStore,
    queue: str,
    *,
    priority_classes: Sequence[str],
    pools: Sequence[str],
    states: Sequence[StateName],
    user: str,
) -> list[str]:
    """Cancel every job of ``queue`` in ``states`` (default: unfinished) that matches the filters."""
    await get_queue(store, queue)
    wanted = sorted(
        {parse_state(s, f"jobStates[{i}]") for i, s in enumerate(states)} or set(UNFINISHED_JOB_STATES)
    )
    async with store.transaction() as tx:
        rows = await views.queue_rows(
            await tx.views(), queue, wanted, priority_classes=priority_classes, pools=pools
        )
        events, cancelled = cancel_events(rows, REASON, user)
        tx.append(events)
    return cancelled
