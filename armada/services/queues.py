"""Queue management: create, update, delete, cordon, and read queues.

Every change is a ``queue*`` event appended inside a store transaction that first reads
the ``queues`` view, so checks ("exists", "has no active jobs") and the change are atomic.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import msgspec
from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.auth.identity import ANONYMOUS
from armada.eventstore import schema
from armada.eventstore.store import EventStore, Transaction
from armada.model.errors import ArmadaError, Conflict, InvalidRequest, NotFound
from armada.model.events import QueueCreated, QueueDeleted, QueueUpdated
from armada.model.queues import QUEUE_NAME, Queue
from armada.model.states import UNFINISHED_JOB_STATES
from armada.model.wire.queues import QueueFailure


def check_queue(queue: Queue) -> None:
    if not QUEUE_NAME.match(queue.name):
        raise InvalidRequest(
            "queue names are 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit",
            field="name",
        )
    if not queue.priority_factor > 0:
        raise InvalidRequest("priorityFactor must be greater than 0", field="priorityFactor")


def with_creator_as_owner(queue: Queue, user: str) -> Queue:
    """A queue created without owners is owned by its creator (unless anonymous: that is everyone)."""
    if queue.user_owners or queue.group_owners or user == ANONYMOUS:
        return queue
    return msgspec.structs.replace(queue, user_owners=[user])


async def load_queue(conn: AsyncConnection, name: str) -> Queue | None:
    spec = await conn.scalar(select(schema.queues.c.spec).where(schema.queues.c.name == name))
    return None if spec is None else msgspec.convert(spec, Queue)


async def _existing(tx: Transaction, name: str) -> Queue:
    queue = await load_queue(tx.connection, name)
    if queue is None:
        raise NotFound(f"queue {name!r} does not exist", field="queue")
    return queue


async def _create(tx: Transaction, queue: Queue, user: str) -> None:
    check_queue(queue)
    queue = with_creator_as_owner(queue, user)
    if await load_queue(tx.connection, queue.name) is not None:
        raise Conflict(f"queue {queue.name!r} already exists", field="name")
    tx.append([QueueCreated(queue=queue.name, spec=queue, requestor=user)])


#: Checks a change of an existing queue (old, new) and raises if the caller may not make it.
Authorize = Callable[[Queue, Queue], None]


async def _update(tx: Transaction, queue: Queue, user: str, authorize: Authorize | None = None) -> None:
    check_queue(queue)
    existing = await _existing(tx, queue.name)
    if authorize is not None:
        authorize(existing, queue)
    tx.append([QueueUpdated(queue=queue.name, spec=queue, requestor=user)])


async def create_queue(store: EventStore, queue: Queue, user: str) -> None:
    async with store.transaction() as tx:
        await _create(tx, queue, user)


async def update_queue(
    store: EventStore, name: str, queue: Queue, user: str, authorize: Authorize | None = None
) -> None:
    """Replace a queue's definition; ``authorize`` sees the stored and the new definition."""
    if queue.name != name:
        raise InvalidRequest(f"the body names queue {queue.name!r} but the path {name!r}", field="name")
    async with store.transaction() as tx:
        await _update(tx, queue, user, authorize)


async def set_cordoned(store: EventStore, name: str, cordoned: bool, user: str) -> None:
    """Cordon (refuse submissions, stop scheduling) or uncordon a queue."""
    async with store.transaction() as tx:
        queue = await _existing(tx, name)
        if queue.cordoned != cordoned:
            spec = msgspec.structs.replace(queue, cordoned=cordoned)
            tx.append([QueueUpdated(queue=name, spec=spec, requestor=user)])


async def delete_queue(store: EventStore, name: str, user: str) -> None:
    """Delete a queue; refused (409) while it has jobs that are not finished."""
    jobs = schema.jobs
    async with store.transaction() as tx:
        await _existing(tx, name)
        busy = await tx.connection.scalar(
            select(
                exists().where(
                    jobs.c.queue == name, jobs.c.state.in_([s.value for s in UNFINISHED_JOB_STATES])
                )
            )
        )
        if busy:
            raise Conflict(f"queue {name!r} has queued or running jobs; cancel them first", field="name")
        tx.append([QueueDeleted(queue=name, requestor=user)])


async def get_queue(store: EventStore, name: str) -> Queue:
    async with store.engine.connect() as conn:
        queue = await load_queue(conn, name)
    if queue is None:
        raise NotFound(f"queue {name!r} does not exist", field="name")
    return queue


async def list_queues(store: EventStore, limit: int | None = None) -> list[Queue]:
    """All queues by name, or the first ``limit`` (0 or none: all)."""
    if limit is not None and limit < 0:
        raise InvalidRequest("num must not be negative", field="num")
    query = select(schema.queues.c.spec).order_by(schema.queues.c.name)
    if limit:
        query = query.limit(min(limit, 2**31 - 1))  # a larger LIMIT overflows the database
    async with store.engine.connect() as conn:
        return [msgspec.convert(spec, Queue) for spec in await conn.scalars(query)]


async def _each(
    store: EventStore,
    queues: list[Queue],
    user: str,
    change: Callable[[Transaction, Queue, str], Awaitable[None]],
) -> list[QueueFailure]:
    """Apply ``change`` to each queue in its own transaction; collect the failures."""
    failures = []
    for queue in queues:
        try:
            async with store.transaction() as tx:
                await change(tx, queue, user)
        except ArmadaError as exc:
            failures.append(QueueFailure(queue=queue, error=exc.detail))
    return failures


async def create_queues(store: EventStore, queues: list[Queue], user: str) -> list[QueueFailure]:
    return await _each(store, queues, user, _create)


async def update_queues(
    store: EventStore, queues: list[Queue], user: str, authorize: Authorize | None = None
) -> list[QueueFailure]:
    return await _each(store, queues, user, functools.partial(_update, authorize=authorize))
