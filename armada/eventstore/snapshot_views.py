"""Reads of the views the scheduler's in-memory state is loaded from on start.

The log follower rebuilds its state from these (inside one consistent snapshot) rather
than by replaying every job ever submitted: the nodes and executors, and the jobs and runs
that are still active. Queues come from :func:`.queue_views.queue_specs`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.eventstore.views import AnyRow

ACTIVE_JOB_STATES = ("QUEUED", "LEASED", "PENDING", "RUNNING")
ACTIVE_RUN_STATES = ("LEASED", "PENDING", "RUNNING")


async def node_specs(conn: AsyncConnection) -> list[Row[str, str, Any]]:
    """``(executor_id, name, spec)`` of every node reported."""
    nodes = schema.nodes
    return list((await conn.execute(select(nodes.c.executor_id, nodes.c.name, nodes.c.spec))).all())


async def executor_rows(conn: AsyncConnection) -> list[AnyRow]:
    """Every ``executors`` row."""
    return list((await conn.execute(select(schema.executors))).all())


async def active_job_pages(conn: AsyncConnection, size: int) -> AsyncIterator[list[AnyRow]]:
    """The jobs not yet finished, by job id, ``size`` at a time: spec, priority, submission
    time, attempts and whether a cancellation or preemption was asked for.

    One query read through a server-side cursor: a backlog of a million jobs' specs fetched
    at once would take gigabytes, and a page per query would sort the backlog once per page.
    """
    jobs = schema.jobs
    query = (
        select(
            jobs.c.job_id,
            jobs.c.spec,
            jobs.c.priority,
            jobs.c.submitted,
            jobs.c.attempts,
            jobs.c.cancel_requested,
            jobs.c.preempt_requested,
        )
        .select_from(schema.jobs_and_states)
        .where(schema.job_states.c.state.in_(ACTIVE_JOB_STATES))
        .order_by(jobs.c.job_id)
    )
    result = await conn.stream(query)
    async for page in result.partitions(size):
        yield list(page)


async def active_run_rows(conn: AsyncConnection) -> list[AnyRow]:
    """The runs holding a node (leased, pending or running), with their job's job set."""
    jobs, runs = schema.jobs, schema.runs
    query = (
        select(runs, jobs.c.job_set_id)
        .join(jobs, jobs.c.job_id == runs.c.job_id)
        .where(runs.c.state.in_(ACTIVE_RUN_STATES))
    )
    return list((await conn.execute(query)).all())
