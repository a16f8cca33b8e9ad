"""Bulk commands: preempt or cancel every matching job of a queue, an executor or a node.

Upstream's ``PreemptOnQueue``/``CancelOnQueue``, ``PreemptOnExecutor``/``CancelOnExecutor``
and ``PreemptOnNode``/``CancelOnNode``: one selection (:class:`JobSelector`: queues,
priority classes, pools, executor, node), one transaction appending the same events as the
per-job commands. On an executor or a node only jobs holding a node are chosen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from armada.eventstore import fleet_views, views
from armada.eventstore.store import EventStore
from armada.eventstore.views import JobSelector
from armada.fleet.controls import node_owner
from armada.model.errors import NotFound
from armada.model.events import JobPreempting
from armada.model.lifecycle import UNFINISHED_JOB_STATES, JobState
from armada.model.wire.jobs import StateName
from armada.scheduling.config import PriorityClass
from armada.services.job_actions import cancel_events, parse_state
from armada.services.queues import get_queue

QUEUE_REASON = "queue-wide request"
EXECUTOR_REASON = "executor-wide request"
NODE_REASON = "node-wide request"
ACTIVE = (JobState.LEASED, JobState.PENDING, JobState.RUNNING)


async def preempt_matching(
    store: EventStore,
    selector: JobSelector,
    *,
    user: str,
    known_classes: Mapping[str, PriorityClass],
    reason: str,
) -> list[str]:
    """Ask for every active job the selector chooses, in a preemptible class, to be preempted."""
    async with store.transaction() as tx:
        rows = await views.matching_rows(await tx.views(), selector, ACTIVE)
        chosen = [
            row
            for row in rows
            if (pc := known_classes.get(row.priority_class)) is not None and pc.preemptible
        ]
        tx.append([row.event(JobPreempting, reason=reason, requestor=user) for row in chosen])
    return [row.job_id for row in chosen]


async def cancel_matching(
    store: EventStore, selector: JobSelector, states: Sequence[JobState], *, user: str, reason: str
) -> list[str]:
    """Cancel every job in ``states`` that the selector chooses."""
    async with store.transaction() as tx:
        rows = await views.matching_rows(await tx.views(), selector, states)
        events, cancelled = cancel_events(rows, reason, user)
        tx.append(events)
    return cancelled


async def preempt_on_queue(
    store: EventStore,
    queue: str,
    *,
    priority_classes: Sequence[str],
    pools: Sequence[str],
    user: str,
    known_classes: Mapping[str, PriorityClass],
) -> list[str]:
    """Preempt the queue's active jobs of preemptible classes (filters: classes, pools)."""
    await get_queue(store, queue)  # 404 for a queue that does not exist
    selector = JobSelector(queues=[queue], priority_classes=priority_classes, pools=pools)
    return await preempt_matching(
        store, selector, user=user, known_classes=known_classes, reason=QUEUE_REASON
    )


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
    selector = JobSelector(queues=[queue], priority_classes=priority_classes, pools=pools)
    return await cancel_matching(store, selector, wanted, user=user, reason=QUEUE_REASON)


async def on_executor(
    store: EventStore,
    verb: Literal["preempt", "cancel"],
    executor: str,
    *,
    node: str = "",
    queues: Sequence[str],
    priority_classes: Sequence[str],
    user: str,
    known_classes: Mapping[str, PriorityClass],
) -> list[str]:
    """Preempt (the preemptible ones) or cancel the jobs running on ``executor`` or on its
    ``node`` (``executor`` may be left out when one executor has such a node); 404 for an
    executor never seen (or forgotten)."""
    async with store.engine.connect() as conn:
        if node and not executor:
            executor = await node_owner(conn, node, field="name")
        if not await fleet_views.executor_known(conn, executor):
            raise NotFound(f"executor {executor!r} not found", field="executor" if node else "name")
    selector = JobSelector(queues=queues, priority_classes=priority_classes, executor=executor, node=node)
    reason = NODE_REASON if node else EXECUTOR_REASON
    if verb == "preempt":
        return await preempt_matching(store, selector, user=user, known_classes=known_classes, reason=reason)
    return await cancel_matching(store, selector, ACTIVE, user=user, reason=reason)
