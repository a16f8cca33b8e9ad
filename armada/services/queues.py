"""Queue management: create, update, delete, cordon, and read queues.

Every change is a ``queue*`` event appended inside a store transaction that first reads
the ``queues`` view, so checks ("exists", "has no active jobs") and the change are atomic.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.auth.identity import ANONYMOUS
from armada.eventstore.queue_views import queue_exists, queue_has_unfinished_jobs, queue_spec, queue_specs
from armada.eventstore.store import EventStore, Transaction
from armada.eventstore.unreadable import UnreadableRecords
from armada.model.errors import ArmadaError, Conflict, InvalidRequest, NotFound
from armada.model.events import QueueCreated, QueueDeleted, QueueUpdated
from armada.model.metadata import check_labels, check_printable, check_printable_names
from armada.model.queues import QUEUE_NAME, Queue
from armada.model.wire.queues import QueueFailure
from armada.retries.policies import check_queue_policies
from armada.services.pod_policy import QueueSecurityGate


def check_queue(queue: Queue) -> None:
    if not QUEUE_NAME.match(queue.name):
        raise InvalidRequest(
            "queue names are 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or "
            "digit (they become Kubernetes label values)",
            field="name",
        )
    check_labels(queue.labels, "labels")
    check_printable_names(queue.user_owners, "userOwners")
    check_printable_names(queue.group_owners, "groupOwners")
    for index, grant in enumerate(queue.permissions):
        for number, subject in enumerate(grant.subjects):
            check_printable(subject.name, f"permissions[{index}].subjects[{number}].name")


def with_creator_as_owner(queue: Queue, user: str) -> Queue:
    """A queue created without owners is owned by its creator (unless anonymous: that is everyone)."""
    if queue.user_owners or queue.group_owners or user == ANONYMOUS:
        return queue
    return msgspec.structs.replace(queue, user_owners=[user])


def _decode_queue(spec: Any) -> Queue:
    return msgspec.convert(spec, Queue)


async def load_queue(conn: AsyncConnection, name: str, records: UnreadableRecords) -> Queue | None:
    """The queue, or ``None``; a stored queue this version cannot read is a 409 (and reported)."""
    spec = await queue_spec(conn, name)
    if spec is None:
        return None
    queue = records.decode(_decode_queue, spec, "queue", name)
    if queue is None:
        raise Conflict(
            f"queue {name!r} is stored in a form this version cannot read; update (PUT) or delete it",
            field="name",
        )
    return queue


async def _exists(conn: AsyncConnection, name: str) -> bool:
    """Whether the queue exists, without reading its spec (a damaged one can be replaced)."""
    return await queue_exists(conn, name)


async def _require(tx: Transaction, name: str) -> None:
    if not await _exists(await tx.views(), name):
        raise NotFound(f"queue {name!r} does not exist", field="queue")


async def _previous(conn: AsyncConnection, name: str) -> Queue | None:
    """The stored queue for judging a change to its security fields; ``None`` when it cannot be
    read (a damaged queue being replaced is judged as if new: only defaults need no permission)."""
    spec = await queue_spec(conn, name)
    try:
        return None if spec is None else _decode_queue(spec)
    except msgspec.ValidationError:
        return None


async def _create(tx: Transaction, queue: Queue, user: str, gate: QueueSecurityGate) -> None:
    check_queue(queue)
    queue = with_creator_as_owner(queue, user)
    if await _exists(await tx.views(), queue.name):
        raise Conflict(f"queue {queue.name!r} already exists", field="name")
    gate.check(queue, None)
    await check_queue_policies(await tx.views(), queue)
    tx.append([QueueCreated(queue=queue.name, spec=queue, requestor=user)])


#: Checks a change of an existing queue (stored, new) and raises if the caller may not make it
#: (owners, permissions, cordoned: :mod:`armada.auth.queue_changes`).
Authorize = Callable[[Queue, Queue], None]


async def _update(
    tx: Transaction, queue: Queue, user: str, gate: QueueSecurityGate, authorize: Authorize | None = None
) -> None:
    check_queue(queue)
    await _require(tx, queue.name)
    previous = await _previous(await tx.views(), queue.name)
    gate.check(queue, previous)
    if authorize is not None:
        authorize(previous or Queue(name=queue.name), queue)
    await check_queue_policies(await tx.views(), queue)
    tx.append([QueueUpdated(queue=queue.name, spec=queue, requestor=user)])


async def create_queue(store: EventStore, queue: Queue, user: str, gate: QueueSecurityGate) -> None:
    async with store.transaction() as tx:
        await _create(tx, queue, user, gate)


async def update_queue(
    store: EventStore,
    name: str,
    queue: Queue,
    user: str,
    gate: QueueSecurityGate,
    authorize: Authorize | None = None,
) -> None:
    """Replace a queue's definition; ``gate`` and ``authorize`` judge the change."""
    if queue.name != name:
        raise InvalidRequest(f"the body names queue {queue.name!r} but the path {name!r}", field="name")
    async with store.transaction() as tx:
        await _update(tx, queue, user, gate, authorize)


async def set_cordoned(store: EventStore, name: str, cordoned: bool, user: str) -> None:
    """Cordon (refuse submissions, stop scheduling) or uncordon a queue."""
    async with store.transaction() as tx:
        queue = await load_queue(await tx.views(), name, store.unreadable)
        if queue is None:
            raise NotFound(f"queue {name!r} does not exist", field="queue")
        if queue.cordoned != cordoned:
            spec = msgspec.structs.replace(queue, cordoned=cordoned)
            tx.append([QueueUpdated(queue=name, spec=spec, requestor=user)])


async def delete_queue(store: EventStore, name: str, user: str) -> None:
    """Delete a queue; refused (409) while it has jobs that are not finished."""
    async with store.transaction() as tx:
        await _require(tx, name)
        busy = await queue_has_unfinished_jobs(await tx.views(), name)
        if busy:
            raise Conflict(f"queue {name!r} has queued or running jobs; cancel them first", field="name")
        tx.append([QueueDeleted(queue=name, requestor=user)])


async def get_queue(store: EventStore, name: str) -> Queue:
    async with store.engine.connect() as conn:
        queue = await load_queue(conn, name, store.unreadable)
    if queue is None:
        raise NotFound(f"queue {name!r} does not exist", field="name")
    return queue


async def list_queues(store: EventStore, limit: int | None = None) -> list[Queue]:
    """All queues by name, or the first ``limit`` (0 or none: all)."""
    async with store.engine.connect() as conn:
        rows = await queue_specs(conn, by_name=True, limit=limit)
    decoded = (store.unreadable.decode(_decode_queue, spec, "queue", name) for name, spec in rows)
    return [queue for queue in decoded if queue is not None]  # unreadable ones are reported, skipped


async def _each(
    store: EventStore,
    queues: list[Queue],
    user: str,
    change: Callable[[Transaction, Queue, str, QueueSecurityGate], Awaitable[None]],
    gate: QueueSecurityGate,
) -> list[QueueFailure]:
    """Apply ``change`` to each queue in its own transaction; collect the failures."""
    failures = []
    for queue in queues:
        try:
            async with store.transaction() as tx:
                await change(tx, queue, user, gate)
        except ArmadaError as exc:
            failures.append(QueueFailure(queue=queue, error=exc.detail))
    return failures


async def create_queues(
    store: EventStore, queues: list[Queue], user: str, gate: QueueSecurityGate
) -> list[QueueFailure]:
    return await _each(store, queues, user, _create, gate)


async def update_queues(
    store: EventStore,
    queues: list[Queue],
    user: str,
    gate: QueueSecurityGate,
    authorize: Authorize | None = None,
) -> list[QueueFailure]:
    return await _each(store, queues, user, functools.partial(_update, authorize=authorize), gate)
