"""Read side of the views: the rows services act on, looked up by id.

:mod:`.projections` writes the views from events; this module reads them back as typed
rows, so that services hold no SQL of their own for these lookups. Every lookup by many
ids goes through :func:`armada.eventstore.dialects.in_values` (one array parameter on
PostgreSQL, chunked ``IN`` lists on SQLite).

The other reads services make live in siblings, one concept each: :mod:`.job_views` (jobs
and runs for queries and checks), :mod:`.queue_views`, :mod:`.retry_policy_views`,
:mod:`.snapshot_views` (what the scheduler's state is loaded from) and :mod:`.audit`
(the admin check's table walks).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar, overload

from sqlalchemy import Column, Row, Select, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, schema
from armada.eventstore.unreadable import UnreadableRecords
from armada.model import events as ev
from armada.model.jobs import Job, decode_job
from armada.model.lifecycle import JobState

E = TypeVar("E", bound=ev.Event)

#: A row of any number of columns, read by column name.
AnyRow = Row[*tuple[Any, ...]]


@overload
def utc(moment: datetime) -> datetime: ...
@overload
def utc(moment: None) -> None: ...
def utc(moment: datetime | None) -> datetime | None:
    """A stored time, made timezone-aware: SQLite hands back naive datetimes, and every
    stored time is UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


async def rows_in(
    conn: AsyncConnection, query: Select[Any], column: Column[str], keys: Collection[str]
) -> list[Row[Any]]:
    """Rows of ``query`` whose ``column`` is one of ``keys`` (duplicates asked for once)."""
    found: list[Row[Any]] = []
    for where in dialects.in_values(conn, column, list(dict.fromkeys(keys))):
        found += (await conn.execute(query.where(where))).all()
    return found


class JobRow(NamedTuple):
    """A job's row in the ``jobs`` view as commands and decisions are checked against it."""

    job_id: str
    queue: str
    job_set_id: str
    state: JobState
    latest_run_id: str = ""
    priority_class: str = ""

    def envelope(self, run_id: str = "") -> ev.Envelope:
        return {"queue": self.queue, "job_set_id": self.job_set_id, "job_id": self.job_id, "run_id": run_id}

    def event(self, kind: type[E], **fields: Any) -> E:
        """An event of ``kind`` about this job (and its current run, if it holds a node)."""
        return kind(**self.envelope(self.latest_run_id if self.state.active else ""), **fields)


def _job_rows_query() -> Select[Any]:
    jobs = schema.jobs
    return select(
        jobs.c.job_id,
        jobs.c.queue,
        jobs.c.job_set_id,
        jobs.c.state,
        jobs.c.latest_run_id,
        jobs.c.priority_class,
    )


def _job_row(row: Row[Any]) -> JobRow:
    return JobRow(
        row.job_id,
        row.queue,
        row.job_set_id,
        JobState(row.state),
        row.latest_run_id or "",
        row.priority_class or "",
    )


async def jobs_by_id(conn: AsyncConnection, job_ids: Collection[str]) -> dict[str, JobRow]:
    """The rows of those of ``job_ids`` that exist."""
    rows = await rows_in(conn, _job_rows_query(), schema.jobs.c.job_id, job_ids)
    return {row.job_id: _job_row(row) for row in rows}


async def job_set_rows(
    conn: AsyncConnection, queue: str, job_set_id: str, states: Iterable[JobState]
) -> list[JobRow]:
    """The rows of a job set's jobs in ``states``, by job id."""
    jobs = schema.jobs
    wanted = [state.value for state in states]
    query = _job_rows_query().where(jobs.c.queue == queue, jobs.c.job_set_id == job_set_id)
    rows = await conn.execute(query.where(jobs.c.state.in_(wanted)).order_by(jobs.c.job_id))
    return [_job_row(row) for row in rows]


class JobSelector(NamedTuple):
    """Which jobs a bulk command acts on; every non-empty field narrows the choice.

    ``executor`` and ``node`` match where the job's current run is (so only jobs holding a
    node); ``pools`` matches the pool of its current run.
    """

    queues: Collection[str] = ()
    priority_classes: Collection[str] = ()
    pools: Collection[str] = ()
    executor: str = ""
    node: str = ""


async def matching_rows(
    conn: AsyncConnection, selector: JobSelector, states: Iterable[JobState]
) -> list[JobRow]:
    """The rows of the jobs in ``states`` that ``selector`` chooses, by job id."""
    jobs, runs = schema.jobs, schema.runs
    wanted = [state.value for state in states]
    states_ = schema.job_states
    query = _job_rows_query().select_from(schema.jobs_and_states).where(states_.c.state.in_(wanted))
    if selector.queues:
        query = query.where(jobs.c.queue.in_(list(selector.queues)))
    if selector.priority_classes:
        query = query.where(jobs.c.priority_class.in_(list(selector.priority_classes)))
    if selector.pools:
        query = query.where(
            jobs.c.latest_run_id.in_(select(runs.c.run_id).where(runs.c.pool.in_(list(selector.pools))))
        )
    if selector.executor:
        query = query.where(jobs.c.cluster == selector.executor)
    if selector.node:
        query = query.where(jobs.c.node == selector.node)
    return [_job_row(row) for row in await conn.execute(query.order_by(jobs.c.job_id))]


async def job_specs(
    conn: AsyncConnection, job_ids: Sequence[str], unreadable: UnreadableRecords
) -> dict[str, Job]:
    """The stored specs of ``job_ids``; a spec that cannot be decoded is reported to
    ``unreadable`` and left out."""
    jobs = schema.jobs
    specs: dict[str, Job] = {}
    for row in await rows_in(conn, select(jobs.c.job_id, jobs.c.spec), jobs.c.job_id, job_ids):
        job = unreadable.decode(decode_job, row.spec, "job", row.job_id, row.job_id)
        if job is not None:
            specs[row.job_id] = job
    return specs


class KillRequest(NamedTuple):
    """Why a job was asked to stop: the cancellation's reason and requestor, or the
    preemption's reason."""

    cancel_reason: str
    cancel_user: str
    preempt_reason: str


async def kill_requests(conn: AsyncConnection, job_ids: Collection[str]) -> dict[str, KillRequest]:
    """The recorded cancellation and preemption requests of ``job_ids``, by job id."""
    jobs = schema.jobs
    query = select(jobs.c.job_id, jobs.c.cancel_reason, jobs.c.cancel_user, jobs.c.reason)
    return {
        row.job_id: KillRequest(row.cancel_reason or "", row.cancel_user or "", row.reason or "")
        for row in await rows_in(conn, query, jobs.c.job_id, job_ids)
    }
