"""Projections: how events change the views.

A batch of events is first folded into :class:`ViewChanges` (the net column values per
row, in event order), then written with one bulk statement per kind of change. Because
every event's effect is "set these columns", folding in any batch size gives the same
rows: live appends and a full replay agree exactly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import msgspec
from sqlalchemy import Table, delete, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, schema
from armada.eventstore.cordons import apply_cordon_event
from armada.eventstore.retry_policies import apply_retry_policy_event
from armada.eventstore.saved_views import apply_saved_view_event
from armada.model import events as ev
from armada.model.lifecycle import JOB_STATE_AFTER, RUN_STATE_AFTER, JobState
from armada.model.quantities import QuantityError, to_units
from armada.model.queues import Queue

Row = dict[str, Any]

_job_encoder = msgspec.json.Encoder()


def _units(requests: dict[str, str], resource: str) -> int:
    try:
        return to_units(resource, requests[resource]) if resource in requests else 0
    except QuantityError:
        return 0


def job_row(event: ev.JobSubmitted) -> Row:
    """The ``jobs`` row of a newly submitted job."""
    job = event.job
    requests = job.scheduling_resource_requirements.requests
    return {
        "job_id": job.id,
        "queue": job.queue,
        "job_set_id": job.job_set_id,
        "owner": job.owner,
        "namespace": job.namespace,
        "client_id": job.client_id or None,
        "priority": job.priority,
        "priority_class": job.priority_class_name,
        "state": JobState.QUEUED.value,
        "submitted": event.created,
        "last_transition": event.created,
        "cpu_millis": _units(requests, "cpu"),
        "memory_bytes": _units(requests, "memory"),
        "gpu": _units(requests, "nvidia.com/gpu"),
        "gang_id": job.gang_id or None,
        "annotations": job.annotations,
        "latest_run_id": None,
        "cluster": None,
        "node": None,
        "exit_code": None,
        "reason": None,
        "cancel_reason": None,
        "cancel_user": None,
        "cancel_ts": None,
        "cancel_requested": False,
        "preempt_requested": False,
        "attempts": 0,
        "spec": _job_encoder.encode(job),
    }


_ORDERED_TYPES = (
    ev.RetryPolicyCreated,
    ev.RetryPolicyUpdated,
    ev.RetryPolicyDeleted,
    ev.QueueCreated,
    ev.QueueUpdated,
    ev.QueueDeleted,
    ev.ExecutorReported,
    ev.ExecutorHeartbeat,
    ev.ExecutorSettingsUpserted,
    ev.ExecutorSettingsDeleted,
    ev.NodeCordonChanged,
    ev.ExecutorDeleted,
    ev.LookoutViewSaved,
    ev.LookoutViewDeleted,
)


class _RowChanges:
    """Inserts and merged updates of one table, keyed by primary key."""

    def __init__(self) -> None:
        self.inserts: dict[str, Row] = {}
        self.updates: dict[str, Row] = {}

    def insert(self, key: str, row: Row) -> None:
        self.inserts[key] = row
        self.updates.pop(key, None)

    def set(self, key: str, values: Row) -> None:
        target = self.inserts.get(key)
        if target is None:
            target = self.updates.setdefault(key, {})
        target.update(values)

    def __bool__(self) -> bool:
        return bool(self.inserts or self.updates)


def _leased(event: ev.JobLeased, job: Row, run: Row) -> None:
    job |= {"latest_run_id": event.run_id, "cluster": event.cluster_id, "node": event.node_id}


def _pending(event: ev.JobPending, job: Row, run: Row) -> None:
    run["pending"] = event.created


def _running(event: ev.JobRunning, job: Row, run: Row) -> None:
    run["started"] = event.created


def _succeeded(event: ev.JobSucceeded, job: Row, run: Row) -> None:
    job["exit_code"] = run["exit_code"] = 0


def _failed(event: ev.JobFailed, job: Row, run: Row) -> None:
    job |= {"exit_code": event.exit_code, "reason": event.reason}
    run |= {"exit_code": event.exit_code, "reason": event.reason}


def _cancelled(event: ev.JobCancelled, job: Row, run: Row) -> None:
    job |= {"cancel_reason": event.reason, "cancel_user": event.requestor, "cancel_ts": event.created}
    run["reason"] = event.reason or "cancelled"


def _preempted(event: ev.JobPreempted, job: Row, run: Row) -> None:
    job["reason"] = run["reason"] = event.reason


def _lease_returned(event: ev.JobLeaseReturned, job: Row, run: Row) -> None:
    run["reason"] = event.reason


def _lease_expired(event: ev.JobLeaseExpired, job: Row, run: Row) -> None:
    run["reason"] = "lease expired"


def _reprioritized(event: ev.JobReprioritized, job: Row, run: Row) -> None:
    job["priority"] = event.new_priority


def _cancelling(event: ev.JobCancelling, job: Row, run: Row) -> None:
    job |= {"cancel_requested": True, "cancel_reason": event.reason, "cancel_user": event.requestor}


def _preempting(event: ev.JobPreempting, job: Row, run: Row) -> None:
    job |= {"preempt_requested": True, "reason": event.reason}


def _queued(event: ev.JobQueued, job: Row, run: Row) -> None:
    job["attempts"] = event.attempts
    if event.job is not None:  # requeued with a changed spec (a retry policy's mutate)
        requests = event.job.scheduling_resource_requirements.requests
        job |= {
            "spec": _job_encoder.encode(event.job),
            "annotations": event.job.annotations,
            "cpu_millis": _units(requests, "cpu"),
            "memory_bytes": _units(requests, "memory"),
            "gpu": _units(requests, "nvidia.com/gpu"),
        }


_DETAILS: dict[type[ev.Event], Callable[[Any, Row, Row], None]] = {
    ev.JobLeased: _leased,
    ev.JobPending: _pending,
    ev.JobRunning: _running,
    ev.JobSucceeded: _succeeded,
    ev.JobFailed: _failed,
    ev.JobCancelled: _cancelled,
    ev.JobPreempted: _preempted,
    ev.JobLeaseReturned: _lease_returned,
    ev.JobLeaseExpired: _lease_expired,
    ev.JobReprioritized: _reprioritized,
    ev.JobCancelling: _cancelling,
    ev.JobPreempting: _preempting,
    ev.JobQueued: _queued,
}


class _Effect(NamedTuple):
    """What an event type does to the job and run state columns (precomputed per type)."""

    job_state: str | None
    run_state: str | None
    run_finished: bool


def _effect(event_type: type[ev.Event]) -> _Effect:
    tag = str(event_type.__struct_config__.tag)
    job_state = JOB_STATE_AFTER.get(tag)
    run_state = RUN_STATE_AFTER.get(tag)
    return _Effect(
        job_state.value if job_state else None,
        run_state.value if run_state else None,
        run_state is not None and not run_state.active,
    )


_EFFECTS = {cls: _effect(cls) for cls in ev.AnyEvent.__args__}


class ViewChanges:
    """The net effect of a batch of events on the views."""

    def __init__(self) -> None:
        self.jobs = _RowChanges()
        self.runs = _RowChanges()
        # Queue and executor changes are rare; they are applied one by one, in order.
        self.ordered: list[ev.Event] = []

    def add_all(self, batch: Iterable[ev.Event]) -> ViewChanges:
        for event in batch:
            self.add(event)
        return self

    def merge(self, later: ViewChanges) -> ViewChanges:
        """Fold in a later batch's changes as if its events had been added here (rows copied)."""
        for mine, theirs in ((self.jobs, later.jobs), (self.runs, later.runs)):
            for key, row in theirs.inserts.items():
                mine.insert(key, dict(row))
            for key, values in theirs.updates.items():
                mine.set(key, values)
        self.ordered += later.ordered
        return self

    def add(self, event: ev.Event) -> None:
        if isinstance(event, ev.JobSubmitted):
            self.jobs.insert(event.job_id, job_row(event))
        elif isinstance(event, _ORDERED_TYPES):
            self.ordered.append(event)
        else:
            self._add_job_event(event)

    def _add_job_event(self, event: ev.Event) -> None:
        effect = _EFFECTS[type(event)]
        job: Row = {"state": effect.job_state, "last_transition": event.created} if effect.job_state else {}
        run: Row = {}
        if effect.run_state and event.run_id:
            run["state"] = effect.run_state
            if effect.run_finished:
                run["finished"] = event.created
        details = _DETAILS.get(type(event))
        if details is not None:
            details(event, job, run)
        if isinstance(event, ev.JobLeased):
            self.runs.insert(event.run_id, _run_row(event))
        elif run and event.run_id:
            self.runs.set(event.run_id, run)
        if job:
            self.jobs.set(event.job_id, job)


def _run_row(event: ev.JobLeased) -> Row:
    return {
        "run_id": event.run_id,
        "job_id": event.job_id,
        "queue": event.queue,
        "cluster": event.cluster_id,
        "node": event.node_id,
        "pool": event.pool,
        "state": "LEASED",
        "leased": event.created,
        "pending": None,
        "started": None,
        "finished": None,
        "exit_code": None,
        "reason": None,
    }


async def apply(conn: AsyncConnection, changes: ViewChanges) -> None:
    """Write ``changes`` to the views inside the caller's transaction."""
    await insert_rows(conn, changes)
    async with dialects.pipeline(conn):
        await update_rows(conn, changes)
    await apply_ordered(conn, changes)


async def insert_rows(conn: AsyncConnection, changes: ViewChanges) -> None:
    """The new rows (first: an update never targets a row inserted by the same batch)."""
    new_jobs = list(changes.jobs.inserts.values())
    await dialects.insert_rows(conn, schema.jobs, new_jobs)
    await dialects.insert_rows(conn, schema.job_states, [state_row(row) for row in new_jobs])
    await dialects.insert_rows(conn, schema.runs, list(changes.runs.inserts.values()))


async def update_rows(conn: AsyncConnection, changes: ViewChanges) -> None:
    """The changed rows: one statement per set of columns changed, pipelinable."""
    await _update_rows(conn, schema.jobs, "job_id", changes.jobs)
    changed_states = [state_row(row, pk) for pk, row in changes.jobs.updates.items() if "state" in row]
    await dialects.update_rows(conn, schema.job_states, "job_id", _STATE_COLUMNS, changed_states)
    await _update_rows(conn, schema.runs, "run_id", changes.runs)


#: The columns of ``job_states`` a state change sets (it always sets both).
_STATE_COLUMNS = ("last_transition", "state")


def state_row(job: Row, pk: str = "") -> Row:
    """A job's ``job_states`` row (to insert), or with ``pk`` its changed values (to update)."""
    if pk:
        return {"state": job["state"], "last_transition": job["last_transition"], "_pk": pk}
    return {
        "state": job["state"],
        "last_transition": job["last_transition"],
        "job_id": job["job_id"],
        "queue": job["queue"],
    }


async def apply_ordered(conn: AsyncConnection, changes: ViewChanges) -> None:
    """Queue and executor changes, one by one in log order."""
    for event in changes.ordered:
        await _apply_ordered(conn, event)


async def _update_rows(conn: AsyncConnection, table: Table, key: str, changes: _RowChanges) -> None:
    by_columns: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    for pk, values in changes.updates.items():
        by_columns[tuple(sorted(values))].append({**values, "_pk": pk})
    for columns, rows in by_columns.items():
        await dialects.update_rows(conn, table, key, columns, rows)


def _queue_row(spec: Queue) -> Row:
    return {
        "priority_factor": spec.priority_factor,
        "cordoned": spec.cordoned,
        "spec": msgspec.to_builtins(spec),
    }


async def _apply_ordered(conn: AsyncConnection, event: ev.Event) -> None:
    match event:
        case ev.QueueCreated():
            row = _queue_row(event.spec) | {"name": event.queue, "created": event.created}
            await conn.execute(insert(schema.queues).values(row | {"updated": event.created}))
        case ev.QueueUpdated():
            await conn.execute(
                update(schema.queues)
                .where(schema.queues.c.name == event.queue)
                .values(_queue_row(event.spec) | {"updated": event.created})
            )
        case ev.QueueDeleted():
            await conn.execute(delete(schema.queues).where(schema.queues.c.name == event.queue))
        case ev.RetryPolicyCreated() | ev.RetryPolicyUpdated() | ev.RetryPolicyDeleted():
            await apply_retry_policy_event(conn, event)
        case ev.LookoutViewSaved() | ev.LookoutViewDeleted():
            await apply_saved_view_event(conn, event)
        case ev.ExecutorReported():
            await _replace_executor_nodes(conn, event)
        case ev.ExecutorHeartbeat():
            await conn.execute(
                update(schema.executors)
                .where(schema.executors.c.executor_id == event.executor_id)
                .values(last_seen=event.created)
            )
        case (
            ev.ExecutorSettingsUpserted()
            | ev.ExecutorSettingsDeleted()
            | ev.NodeCordonChanged()
            | ev.ExecutorDeleted()
        ):
            await apply_cordon_event(conn, event)
        case _:  # pragma: no cover - add() only routes the types above here
            raise TypeError(f"not an ordered event: {event.type}")


async def _replace_executor_nodes(conn: AsyncConnection, event: ev.ExecutorReported) -> None:
    executors = schema.executors
    values: Row = {"pool": event.pool, "node_count": len(event.nodes), "last_seen": event.created}
    result = await conn.execute(
        update(executors).where(executors.c.executor_id == event.executor_id).values(values)
    )
    if result.rowcount == 0:
        await conn.execute(
            insert(executors).values(values | {"executor_id": event.executor_id, "first_seen": event.created})
        )
    await conn.execute(delete(schema.nodes).where(schema.nodes.c.executor_id == event.executor_id))
    if event.nodes:
        await dialects.insert_rows(conn, schema.nodes, [_node_row(event, node) for node in event.nodes])


def _node_row(event: ev.ExecutorReported, node: ev.ExecutorNode) -> Row:
    return {
        "executor_id": event.executor_id,
        "name": node.name,
        "pool": node.pool or event.pool,
        "spec": msgspec.to_builtins(node),
        "unschedulable": node.unschedulable,
        "ready": node.ready,
        "updated": event.created,
    }
