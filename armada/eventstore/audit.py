"""Reads for the audit of the log and the views (``armada admin check``).

:mod:`armada.services.invariants` decides what is a violation; this module walks the tables
for it: the log in batches, every spec the views hold, the runs and jobs the view rules
are checked on, and every view's rows in primary-key order for comparison with a replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.eventstore.store import StoredEvent
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.model.lifecycle import JobState, RunState

_ACTIVE_RUN_STATES = [state.value for state in RunState if state.active]
_TERMINAL_JOB_STATES = [state.value for state in JobState if state.terminal]


async def log_batch(
    conn: AsyncConnection, after: int, records: UnreadableRecords, limit: int
) -> list[StoredEvent]:
    """Up to ``limit`` events of the log after sequence number ``after``, in order."""
    events = schema.events
    result = await conn.execute(
        select(events.c.seq, events.c.payload).where(events.c.seq > after).order_by(events.c.seq).limit(limit)
    )
    return await decode_log_rows(conn, result.all(), records)


async def stored_specs(conn: AsyncConnection) -> list[tuple[str, Sequence[Row[Any, Any]]]]:
    """``(key, spec)`` of every job, queue and node the views hold, by kind (``job``,
    ``queue``, ``node``; a node's key is ``executor/name``)."""
    jobs, queues, nodes = schema.jobs, schema.queues, schema.nodes
    queries = [
        ("job", select(jobs.c.job_id, jobs.c.spec).order_by(jobs.c.job_id)),
        ("queue", select(queues.c.name, queues.c.spec).order_by(queues.c.name)),
        (
            "node",
            select(nodes.c.executor_id + "/" + nodes.c.name, nodes.c.spec).order_by(nodes.c.executor_id),
        ),
    ]
    return [(kind, (await conn.execute(query)).all()) for kind, query in queries]


async def active_runs(conn: AsyncConnection) -> Sequence[Row[str, str]]:
    """``(job_id, run_id)`` of every run holding a node, by job id."""
    runs = schema.runs
    query = select(runs.c.job_id, runs.c.run_id).where(runs.c.state.in_(_ACTIVE_RUN_STATES))
    return (await conn.execute(query.order_by(runs.c.job_id))).all()


async def runs_of_missing_jobs(conn: AsyncConnection) -> Sequence[Row[str, str]]:
    """``(run_id, job_id)`` of every run whose job is not in the ``jobs`` view."""
    runs, jobs = schema.runs, schema.jobs
    query = select(runs.c.run_id, runs.c.job_id).where(~runs.c.job_id.in_(select(jobs.c.job_id)))
    return (await conn.execute(query)).all()


async def terminal_jobs_among(conn: AsyncConnection, job_ids: list[str]) -> Sequence[Row[str, str]]:
    """``(job_id, state)`` of those of ``job_ids`` in a terminal state."""
    jobs = schema.jobs
    query = select(jobs.c.job_id, jobs.c.state).where(
        jobs.c.state.in_(_TERMINAL_JOB_STATES), jobs.c.job_id.in_(job_ids)
    )
    return (await conn.execute(query)).all()


async def view_rows(conn: AsyncConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every view's rows (and the usage rollups') in primary-key order, for exact comparison."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for table in (*schema.VIEWS, *schema.ROLLUPS):
        result = await conn.execute(select(table).order_by(*table.primary_key.columns))
        rows[table.name] = [tuple(row) for row in result]
    return rows
