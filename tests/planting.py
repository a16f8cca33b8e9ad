"""Plant stored records this version cannot decode, as a bug or an older version might.

Written straight into the tables (under the store's append lock, so sequence numbers stay
dense), never through the services: the point is records that validation would refuse.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, update

from armada.eventstore import projections, schema
from armada.eventstore.store import EventStore, log_row
from armada.model import events as ev
from armada.model.jobs import Job
from armada.model.queues import Queue
from tests.factories import make_job, submission

#: How the NaN-priority bug stored a job: msgspec writes a non-finite float as ``null``.
_PRIORITY = b'"priority":7.0'
_NULL_PRIORITY = b'"priority":null'


async def plant_events(store: EventStore, rows: list[tuple[ev.Event, bytes]]) -> int:
    """Append ``(event, stored payload)`` pairs as they are, bypassing the encoder; return the last seq."""
    async with store.transaction() as tx:
        seq = tx.head
        for event, payload in rows:
            seq += 1
            await tx.connection.execute(insert(schema.events).values(log_row(seq, event, payload)))
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
    async with store.transaction() as tx:
        await tx.connection.execute(insert(schema.jobs).values(row))
    return job


async def plant_garbage_event(store: EventStore, queue: str, job_set_id: str, job_id: str) -> int:
    """An event whose payload is not even JSON (a torn write, a foreign tool)."""
    event = ev.JobRunning(queue=queue, job_set_id=job_set_id, job_id=job_id)
    return await plant_events(store, [(event, b"\x00\xffnot json")])


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
    async with store.transaction() as tx:
        await tx.connection.execute(insert(schema.queues).values(row))


async def damage_job_spec(store: EventStore, job_id: str) -> None:
    """Make a job's stored spec in the view unreadable (as an older version might have)."""
    async with store.transaction() as tx:
        spec = b'{"id":"' + job_id.encode() + b'","priority":null}'
        await tx.connection.execute(
            update(schema.jobs).where(schema.jobs.c.job_id == job_id).values(spec=spec)
        )
