"""Plant stored records this version cannot decode, as a bug or an older version might.

Written straight into the tables in a transaction of their own that takes the database's
append lock, as another replica's append would (so sequence numbers stay dense), never
through the services: the point is records that validation would refuse.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, projections, schema
from armada.eventstore.store import EventStore, log_row
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.queues import Queue
from tests.factories import make_job, submission

#: How the NaN-priority bug stored a job: msgspec writes a non-finite float as ``null``.
_PRIORITY = b'"priority":7.0'
_NULL_PRIORITY = b'"priority":null'


@asynccontextmanager
async def planting(store: EventStore) -> AsyncIterator[tuple[AsyncConnection, int]]:
    """A write transaction holding the database's append lock, and the log's head."""
    async with store.engine.connect() as raw:
        conn = await raw.execution_options(**{dialects.WRITE_OPTION: True})
        async with conn.begin():
            yield conn, await dialects.lock_log(conn)


async def plant_events(store: EventStore, rows: list[tuple[ev.Event, bytes]]) -> int:
    """Append ``(event, stored payload)`` pairs as they are, bypassing the encoder; return the last seq."""
    async with planting(store) as (conn, head):
        for seq, (event, payload) in enumerate(rows, start=head + 1):
            await conn.execute(insert(schema.events).values(log_row(seq, event, payload)))
    seq = head + len(rows)
    store.notifier.publish(seq)  # wake this process's readers, as an append would
    return seq


async def plant_nan_priority_job(store: EventStore, queue: str, job_set_id: str) -> Job:
    """A queued job as the NaN-priority bug stored it: its event and its view row say ``null``."""
    job = make_job(queue=queue, job_set_id=job_set_id, priority=7.0)
    submitted, queued = submission(job)
    assert isinstance(submitted, ev.JobSubmitted)
    payload = ev.encode_event(submitted)
    assert _PRIORITY in payload
    await plant_events(
        store,
        [(submitted, payload.replace(_PRIORITY, _NULL_PRIORITY)), (queued, ev.encode_event(queued))],
    )
    row = projections.job_row(submitted)
    row["spec"] = row["spec"].replace(_PRIORITY, _NULL_PRIORITY)
    async with planting(store) as (conn, _head):
        await conn.execute(insert(schema.jobs).values(row))
        await conn.execute(insert(schema.job_states).values(projections.state_row(row)))
    return job


async def plant_garbage_event(store: EventStore, queue: str, job_set_id: str, job_id: str) -> int:
    """An event whose payload is not even JSON (a torn write, a foreign tool)."""
    event = ev.JobRunning(queue=queue, job_set_id=job_set_id, job_id=job_id)
    return await plant_events(store, [(event, b"\x00\xffnot json")])


class FutureEvent(ev.Event, tag="jobFuture"):
    """An event type of a version after this one, with a field this one does not know."""

    new_field: int = 1


async def plant_future_event(store: EventStore, queue: str, job_set_id: str, job_id: str) -> int:
    """A :class:`FutureEvent` of a job, as a newer replica appends one during a rolling upgrade."""
    event = FutureEvent(queue=queue, job_set_id=job_set_id, job_id=job_id)
    return await plant_events(store, [(event, ev.encode_event(event))])


async def plant_infinite_queue(store: EventStore, name: str) -> None:
    """A queue as ``"priorityFactor": "Infinity"`` stored it: ``null`` in its event and view."""
    created = ev.QueueCreated(queue=name, spec=Queue(name=name, priority_factor=3.0))
    payload = ev.encode_event(created).replace(b'"priorityFactor":3.0', b'"priorityFactor":null')
    await plant_events(store, [(created, payload)])
    now = datetime.now(UTC)
    row = {
        "name": name,
        "priority_factor": 1.0,
        "cordoned": False,
        "spec": {"name": name, "priorityFactor": None},
        "created": now,
        "updated": now,
    }
    async with planting(store) as (conn, _head):
        await conn.execute(insert(schema.queues).values(row))


async def damage_job_spec(store: EventStore, job_id: str) -> None:
    """Make a job's stored spec in the view unreadable (as an older version might have)."""
    async with planting(store) as (conn, _head):
        spec = b'{"id":"' + job_id.encode() + b'","priority":null}'
        await conn.execute(update(schema.jobs).where(schema.jobs.c.job_id == job_id).values(spec=spec))
