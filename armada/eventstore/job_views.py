"""Read side of the ``jobs`` and ``runs`` views for the job queries and checks services make.

:mod:`.views` holds the rows commands act on (:class:`~.views.JobRow`); this module holds
the other reads services make of jobs and their runs: states, details, client ids, gangs,
the queues ids belong to. Rows come back as stored; services shape them for the wire.
Lookups by many ids go through :func:`.views.rows_in`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, schema
from armada.eventstore.views import AnyRow, rows_in


async def queued_jobs_up_to(conn: AsyncConnection, queue: str, cap: int) -> int:
    """How many jobs wait in ``queue``, counted no further than ``cap`` (so it costs no more
    than ``cap`` index entries however long the queue)."""
    states = schema.job_states
    waiting = select(states.c.job_id).where(states.c.queue == queue, states.c.state == "QUEUED").limit(cap)
    return await conn.scalar(select(func.count()).select_from(waiting.subquery())) or 0


async def job_ids_by_client_id(
    conn: AsyncConnection, queue: str, client_ids: Iterable[str]
) -> dict[str, str]:
    """Job ids already given to ``client_ids`` in ``queue`` (one query)."""
    jobs = schema.jobs
    rows = await conn.execute(
        select(jobs.c.client_id, jobs.c.job_id).where(
            jobs.c.queue == queue, jobs.c.client_id.in_(sorted(client_ids))
        )
    )
    return {client_id: job_id for client_id, job_id in rows}


async def job_queues(conn: AsyncConnection, job_ids: Collection[str]) -> dict[str, str]:
    """The queue of each of ``job_ids`` that exists."""
    jobs = schema.jobs
    rows = await rows_in(conn, select(jobs.c.job_id.label("id"), jobs.c.queue), jobs.c.job_id, job_ids)
    return {row.id: row.queue for row in rows}


async def run_queues(conn: AsyncConnection, run_ids: Collection[str]) -> dict[str, str]:
    """The queue of each of ``run_ids`` that exists."""
    runs = schema.runs
    rows = await rows_in(conn, select(runs.c.run_id.label("id"), runs.c.queue), runs.c.run_id, run_ids)
    return {row.id: row.queue for row in rows}


async def job_state_values(conn: AsyncConnection, job_ids: Collection[str]) -> dict[str, str]:
    """The stored state of each of ``job_ids`` that exists."""
    jobs = schema.jobs
    rows = await rows_in(conn, select(jobs.c.job_id, jobs.c.state), jobs.c.job_id, job_ids)
    return {row.job_id: row.state for row in rows}


async def job_detail_rows(
    conn: AsyncConnection, job_ids: Collection[str], *, with_spec: bool
) -> list[Row[Any]]:
    """The whole ``jobs`` rows of those of ``job_ids`` that exist (``spec`` only if ``with_spec``)."""
    jobs = schema.jobs
    columns = [c for c in jobs.c if c.name != "spec" or with_spec]
    return await rows_in(conn, select(*columns), jobs.c.job_id, job_ids)


async def runs_of_jobs(conn: AsyncConnection, job_ids: Collection[str]) -> list[Row[Any]]:
    """The ``runs`` rows of ``job_ids``, in lease order within each lookup."""
    runs = schema.runs
    return await rows_in(conn, select(runs).order_by(runs.c.leased), runs.c.job_id, job_ids)


async def run_rows(conn: AsyncConnection, run_ids: Collection[str]) -> list[Row[Any]]:
    """The ``runs`` rows of those of ``run_ids`` that exist."""
    runs = schema.runs
    return await rows_in(conn, select(runs), runs.c.run_id, run_ids)


async def job_reasons(conn: AsyncConnection, job_ids: Collection[str]) -> list[Row[Any]]:
    """``(job_id, state, reason)`` of those of ``job_ids`` that exist."""
    jobs = schema.jobs
    query = select(jobs.c.job_id, jobs.c.state, jobs.c.reason)
    return await rows_in(conn, query, jobs.c.job_id, job_ids)


async def executor_pools(conn: AsyncConnection) -> set[str]:
    """The pools of the executors known and of their nodes (a node label may name another)."""
    pools = set(await conn.scalars(select(schema.executors.c.pool).distinct()))
    return pools | set(await conn.scalars(select(schema.nodes.c.pool).distinct()))


async def queues_with_queued_jobs(conn: AsyncConnection) -> set[str]:
    states = schema.job_states
    return set(await conn.scalars(select(states.c.queue).where(states.c.state == "QUEUED").distinct()))


async def pools_and_queues_running(conn: AsyncConnection) -> list[Row[str, str]]:
    """``(pool, queue)`` of every pool with a leased, pending or running run of the queue."""
    runs = schema.runs
    query = (
        select(runs.c.pool, runs.c.queue).where(runs.c.state.in_(["LEASED", "PENDING", "RUNNING"])).distinct()
    )
    return list((await conn.execute(query)).all())


async def job_set_annotations(conn: AsyncConnection, queue: str, job_set_id: str) -> list[Row[str, Any]]:
    """``(job_id, annotations)`` of a job set's jobs, by job id."""
    jobs = schema.jobs
    query = select(jobs.c.job_id, jobs.c.annotations).where(
        jobs.c.queue == queue, jobs.c.job_set_id == job_set_id
    )
    return list((await conn.execute(query.order_by(jobs.c.job_id))).all())


async def gang_rows(conn: AsyncConnection, gangs: Collection[tuple[str, str]]) -> list[AnyRow]:
    """The members of the ``(queue, gang id)`` gangs, in one query per chunk of gang ids: job
    id, queue, job set, gang id, state, latest run, cluster, attempts, spec."""
    jobs = schema.jobs
    query = select(
        jobs.c.job_id,
        jobs.c.queue,
        jobs.c.job_set_id,
        jobs.c.gang_id,
        jobs.c.state,
        jobs.c.latest_run_id,
        jobs.c.cluster,
        jobs.c.attempts,
        jobs.c.spec,
    ).where(jobs.c.queue.in_(sorted({queue for queue, _ in gangs})))
    wanted = set(gangs)
    rows = await rows_in(conn, query, jobs.c.gang_id, [gang_id for _, gang_id in wanted])
    return [row for row in rows if (row.queue, row.gang_id) in wanted]


async def job_queue_specs(conn: AsyncConnection, job_ids: Sequence[str]) -> list[tuple[str, str, Any]]:
    """``(job_id, queue, spec)`` of those of ``job_ids`` that exist."""
    jobs = schema.jobs
    query = select(jobs.c.job_id, jobs.c.queue, jobs.c.spec)
    return [(row.job_id, row.queue, row.spec) for row in await rows_in(conn, query, jobs.c.job_id, job_ids)]


async def queued_event_payloads(conn: AsyncConnection, job_ids: Collection[str]) -> list[tuple[str, Any]]:
    """``(job_id, payload)`` of the ``queued`` events of ``job_ids`` (from the log itself)."""
    events = schema.events
    query = select(events.c.job_id, events.c.payload).where(events.c.type == "queued")
    return [(row.job_id, row.payload) for row in await rows_in(conn, query, events.c.job_id, job_ids)]


async def job_event_rows(
    conn: AsyncConnection, job_ids: Collection[str], types: Collection[str]
) -> list[Row[int, bytes]]:
    """``(seq, payload)`` of the events of ``job_ids`` of the given types, oldest first."""
    events = schema.events
    query = select(events.c.seq, events.c.payload).where(events.c.type.in_(list(types)))
    rows: list[Row[int, bytes]] = []
    for where in dialects.in_values(conn, events.c.job_id, list(dict.fromkeys(job_ids))):
        rows += (await conn.execute(query.where(where))).all()
    return sorted(rows, key=lambda row: row[0])


async def runs_with_ingress_info(conn: AsyncConnection, job_ids: Collection[str]) -> set[str]:
    """Runs of ``job_ids`` whose ``ingressInfo`` event is in the log."""
    events = schema.events
    query = select(events.c.run_id).where(events.c.type == "ingressInfo")
    return {row.run_id for row in await rows_in(conn, query, events.c.job_id, job_ids)}


async def ingress_info_payloads(conn: AsyncConnection, job_ids: Collection[str]) -> list[Any]:
    """The stored payloads of the ``ingressInfo`` events of ``job_ids`` (from the log itself)."""
    events = schema.events
    query = select(events.c.payload).where(events.c.type == "ingressInfo")
    return [row.payload for row in await rows_in(conn, query, events.c.job_id, job_ids)]


class RunWithJob(NamedTuple):
    """A run and its job as :func:`runs_with_their_jobs` reads them (its columns, in order).

    A plain tuple: naming fields of a SQLAlchemy row costs ~0.5 µs each, and every run
    event an executor reports reads one of these.
    """

    run_id: str
    run_state: str
    cluster: str
    node: str
    job_id: str
    queue: str
    job_set_id: str
    job_state: str
    latest_run_id: str | None
    attempts: int
    cancel_requested: bool
    preempt_requested: bool
    cancel_reason: str | None
    cancel_user: str | None
    reason: str | None


async def runs_with_their_jobs(conn: AsyncConnection, run_ids: Sequence[str]) -> list[RunWithJob]:
    """Those of ``run_ids`` that exist, each with what an executor's report of it is checked
    against: the run's state, cluster and node, and its job's state, latest run, attempts
    and the cancellation or preemption asked for."""
    runs, jobs = schema.runs, schema.jobs
    found: list[RunWithJob] = []
    for where in dialects.in_values(conn, runs.c.run_id, run_ids):
        query = (
            select(
                runs.c.run_id,
                runs.c.state.label("run_state"),
                runs.c.cluster,
                runs.c.node,
                jobs.c.job_id,
                jobs.c.queue,
                jobs.c.job_set_id,
                jobs.c.state.label("job_state"),
                jobs.c.latest_run_id,
                jobs.c.attempts,
                jobs.c.cancel_requested,
                jobs.c.preempt_requested,
                jobs.c.cancel_reason,
                jobs.c.cancel_user,
                jobs.c.reason,
            )
            .join(jobs, jobs.c.job_id == runs.c.job_id)
            .where(where)
        )
        found += map(RunWithJob._make, await conn.execute(query))
    return found
