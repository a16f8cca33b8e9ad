"""The overview page: queues with their unfinished jobs and shares, pools and executors.

Counts and capacity come from the views (any replica can answer); fair and actual shares
come from the scheduler's last cycle, which only the leading replica has run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select

from armada.eventstore import fleet_views, schema
from armada.eventstore.store import EventStore
from armada.eventstore.views import utc
from armada.lookout.wire import ExecutorOverview, Overview, PoolSummary, QueueSummary, Resources, Share
from armada.model.lifecycle import UNFINISHED_JOB_STATES, JobState
from armada.scheduling import QueueShare

_ACTIVE = [state.value for state in UNFINISHED_JOB_STATES if state is not JobState.QUEUED]
_GPU = "nvidia.com/gpu"


def _add(total: Resources, more: Resources) -> None:
    total.cpu_millis += more.cpu_millis
    total.memory_bytes += more.memory_bytes
    total.gpu += more.gpu


def _allocatable(spec: Mapping[str, Any]) -> Resources:
    units: Mapping[str, int] = spec.get("allocatable", {})
    return Resources(
        cpu_millis=units.get("cpu", 0), memory_bytes=units.get("memory", 0), gpu=units.get(_GPU, 0)
    )


async def overview(
    store: EventStore,
    shares: Mapping[str, Mapping[str, QueueShare]],
    *,
    now: datetime,
    executor_timeout: float,
) -> Overview:
    """Everything the overview page shows, as of ``now``."""
    jobs, states, nodes, executors = schema.jobs, schema.job_states, schema.nodes, schema.executors
    unfinished = [state.value for state in UNFINISHED_JOB_STATES]
    async with store.engine.connect() as conn:
        queue_rows = (await conn.execute(select(schema.queues).order_by(schema.queues.c.name))).all()
        counts = (
            await conn.execute(
                select(states.c.queue, states.c.state, func.count())
                .where(states.c.state.in_(unfinished))
                .group_by(states.c.queue, states.c.state)
            )
        ).all()
        used_rows = (
            await conn.execute(
                select(
                    jobs.c.cluster,
                    jobs.c.node,
                    func.sum(jobs.c.cpu_millis),
                    func.sum(jobs.c.memory_bytes),
                    func.sum(jobs.c.gpu),
                )
                .select_from(schema.jobs_and_states)
                .where(states.c.state.in_(_ACTIVE))
                .group_by(jobs.c.cluster, jobs.c.node)
            )
        ).all()
        executor_rows = (await conn.execute(select(executors).order_by(executors.c.executor_id))).all()
        node_rows = (
            await conn.execute(
                select(nodes.c.executor_id, nodes.c.name, nodes.c.pool, nodes.c.spec, nodes.c.ready)
            )
        ).all()
        cordons = (await fleet_views.cordons(conn)).executors
    by_queue: dict[str, dict[str, int]] = defaultdict(dict)
    for queue, state, count in counts:
        by_queue[queue][state] = count
    queues = [
        QueueSummary(
            name=row.name,
            priority_factor=row.priority_factor,
            cordoned=row.cordoned,
            counts=by_queue.get(row.name, {}),
            shares={
                pool: Share(
                    fair_share=share.fair_share,
                    adjusted_fair_share=share.adjusted_fair_share,
                    actual_share=share.actual_share,
                    demand=share.demand,
                )
                for pool, pool_shares in sorted(shares.items())
                if (share := pool_shares.get(row.name)) is not None
            },
        )
        for row in queue_rows
    ]
    used = {
        (cluster, node or ""): Resources(
            cpu_millis=int(cpu or 0), memory_bytes=int(memory or 0), gpu=int(gpu or 0)
        )
        for cluster, node, cpu, memory, gpu in used_rows
        if cluster
    }
    summaries = _executors(executor_rows, node_rows, used, now=now, executor_timeout=executor_timeout)
    pools = _pools(executor_rows, node_rows, used)
    for summary in summaries:
        setting = cordons.get(summary.executor_id)
        if setting is not None and setting.cordoned:
            summary.cordoned, summary.cordon_reason = True, setting.reason
    return Overview(queues=queues, pools=pools, executors=summaries)


def _executors(
    executor_rows: Sequence[Row[Any]],
    node_rows: Sequence[Row[Any, Any, Any, Any, Any]],
    used: dict[tuple[str, str], Resources],
    *,
    now: datetime,
    executor_timeout: float,
) -> list[ExecutorOverview]:
    """One summary per executor; ``pool`` lists the pools of its nodes (its own if it has none)."""
    summaries = {
        row.executor_id: ExecutorOverview(
            executor_id=row.executor_id,
            pool=row.pool,
            last_seen=utc(row.last_seen),
            stale=(now - utc(row.last_seen)).total_seconds() > executor_timeout,
            nodes=0,
            ready_nodes=0,
            capacity=Resources(),
            used=Resources(),
        )
        for row in executor_rows
    }
    for (cluster, _), resources in used.items():
        if cluster in summaries:
            _add(summaries[cluster].used, resources)
    node_pools: dict[str, set[str]] = defaultdict(set)
    for executor_id, _, pool, spec, ready in node_rows:
        summary = summaries.get(executor_id)
        if summary is None:
            continue
        node_pools[executor_id].add(pool)
        summary.nodes += 1
        if ready:
            summary.ready_nodes += 1
            _add(summary.capacity, _allocatable(spec))
    for executor_id, pools in node_pools.items():
        summaries[executor_id].pool = ", ".join(sorted(pools))
    return list(summaries.values())


def _pools(
    executor_rows: Sequence[Row[Any]],
    node_rows: Sequence[Row[Any, Any, Any, Any, Any]],
    used: dict[tuple[str, str], Resources],
) -> list[PoolSummary]:
    """Pools by their nodes (one executor may serve several, one pool span executors); an
    executor without nodes counts in its own pool. Use is summed over each pool's nodes."""
    pools: dict[str, PoolSummary] = {}
    members: dict[str, set[str]] = defaultdict(set)

    def pool_named(name: str) -> PoolSummary:
        if name not in pools:
            pools[name] = PoolSummary(name=name, executors=0, nodes=0, capacity=Resources(), used=Resources())
        return pools[name]

    pool_of_node: dict[tuple[str, str], str] = {}
    for executor_id, name, pool, spec, ready in node_rows:
        summary = pool_named(pool)
        members[pool].add(executor_id)
        pool_of_node[(executor_id, name)] = pool
        summary.nodes += 1
        if ready:
            _add(summary.capacity, _allocatable(spec))
    for row in executor_rows:
        if not any(row.executor_id in executors for executors in members.values()):
            members[row.pool].add(row.executor_id)
            pool_named(row.pool)
    for name, executors in members.items():
        pools[name].executors = len(executors)
    for key, resources in used.items():
        pool = pool_of_node.get(key)
        if pool is not None:
            _add(pools[pool].used, resources)
    return sorted(pools.values(), key=lambda p: p.name)
