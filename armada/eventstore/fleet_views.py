"""Read side of the fleet: executors with their settings, nodes and operator cordons.

What the scheduler's state is loaded from (:func:`cordons`), what ``GET /v1/executors``
and Lookout's executors page show (:func:`fleet`), and who owns a node named without its
executor (:func:`executors_with_node`).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.eventstore.views import utc
from armada.model.lifecycle import JobState

ACTIVE = [JobState.LEASED.value, JobState.PENDING.value, JobState.RUNNING.value]


class Setting(NamedTuple):
    cordoned: bool
    reason: str
    set_by: str


class Cordons(NamedTuple):
    """Executor settings by executor, and node cordons (node → reason) by executor."""

    executors: dict[str, Setting]
    nodes: dict[str, dict[str, str]]


class NodeRow(NamedTuple):
    name: str
    unschedulable: bool
    ready: bool


class ExecutorRow(NamedTuple):
    name: str
    pool: str
    last_seen: datetime | None
    nodes: list[NodeRow]


class Fleet(NamedTuple):
    executors: list[ExecutorRow]
    cordons: Cordons
    #: Active jobs by (executor, node).
    running: Counter[tuple[str, str]]


async def cordons(conn: AsyncConnection) -> Cordons:
    settings, nodes = schema.executor_settings, schema.node_cordons
    by_executor = {
        row.executor_id: Setting(row.cordoned, row.cordon_reason, row.set_by)
        for row in await conn.execute(select(settings))
    }
    by_node: dict[str, dict[str, str]] = {}
    for row in await conn.execute(select(nodes)):
        by_node.setdefault(row.executor_id, {})[row.name] = row.reason
    return Cordons(by_executor, by_node)


async def fleet(conn: AsyncConnection) -> Fleet:
    """Every executor that reported (and any cordoned before it reported), sorted by name."""
    executors, nodes, jobs = schema.executors, schema.nodes, schema.jobs
    node_rows: dict[str, list[NodeRow]] = {}
    query = select(nodes.c.executor_id, nodes.c.name, nodes.c.unschedulable, nodes.c.ready)
    for row in await conn.execute(query.order_by(nodes.c.executor_id, nodes.c.name)):
        node_rows.setdefault(row.executor_id, []).append(NodeRow(row.name, row.unschedulable, row.ready))
    found = {
        row.executor_id: ExecutorRow(
            row.executor_id, row.pool, utc(row.last_seen), node_rows.get(row.executor_id, [])
        )
        for row in await conn.execute(select(executors))
    }
    known = await cordons(conn)
    for name, setting in known.executors.items():
        if setting.cordoned and name not in found:
            found[name] = ExecutorRow(name, "", None, [])
    counts = (
        select(jobs.c.cluster, jobs.c.node, func.count())
        .select_from(schema.jobs_and_states)
        .where(schema.job_states.c.state.in_(ACTIVE))
    )
    running: Counter[tuple[str, str]] = Counter()
    for cluster, node, count in await conn.execute(counts.group_by(jobs.c.cluster, jobs.c.node)):
        running[(cluster or "", node or "")] = count
    return Fleet([found[name] for name in sorted(found)], known, running)


async def executors_with_node(conn: AsyncConnection, node: str) -> list[str]:
    """The executors that reported a node called ``node`` (node names are per cluster)."""
    nodes = schema.nodes
    query = select(nodes.c.executor_id).where(nodes.c.name == node).order_by(nodes.c.executor_id)
    return list((await conn.execute(query)).scalars())


async def executor_known(conn: AsyncConnection, executor: str) -> bool:
    """Whether ``executor`` reported and was not forgotten."""
    executors = schema.executors
    query = select(executors.c.executor_id).where(executors.c.executor_id == executor)
    return (await conn.execute(query)).first() is not None


class ActiveRun(NamedTuple):
    run_id: str
    job_id: str
    node: str


async def active_runs(conn: AsyncConnection, executor: str) -> list[ActiveRun]:
    """The runs of ``executor`` that hold (or are about to hold) a node."""
    runs = schema.runs
    query = select(runs.c.run_id, runs.c.job_id, runs.c.node).where(
        runs.c.cluster == executor, runs.c.state.in_(ACTIVE)
    )
    return [ActiveRun(*row) for row in await conn.execute(query.order_by(runs.c.run_id))]
