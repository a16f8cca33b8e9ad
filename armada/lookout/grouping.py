"""Nested grouping of the jobs table: one level of groups with counts and requested resources.

As upstream Lookout's ``groupJobs``, a request lists the groups of one column among the jobs
matching a filter, and the filter's ``within`` names the enclosing groups the user expanded
(one condition each): the next level, or the jobs of a group, are asked for with one more
``within`` entry. So the filters, the read rights (``readable`` queues) and the conditions
of the table's own query (:mod:`armada.lookout.filters`) hold inside every group, and a
group's count is the number of jobs the table shows for it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec
from sqlalchemy import ColumnElement, func, select

from armada.eventstore import schema
from armada.eventstore.store import EventStore
from armada.lookout import filters, group_columns, searches
from armada.lookout.wire import (
    MAX_GROUP_LEVELS,
    GroupAggregate,
    GroupJobsRequest,
    GroupJobsResponse,
)
from armada.model.errors import InvalidRequest

_jobs = schema.jobs


def groups_query(request: GroupJobsRequest, readable: Collection[str] | None) -> Any:
    """One page of groups, and one more (to know whether another page follows)."""
    within = request.filter.within
    if len(within) >= MAX_GROUP_LEVELS:
        raise InvalidRequest(
            f"at most {MAX_GROUP_LEVELS} levels of grouping: group within at most {MAX_GROUP_LEVELS - 1}",
            field="filter.within",
        )
    if any(group_columns.same(request.group_by, group) for group in within):
        raise InvalidRequest("the jobs are already grouped by this column", field="groupBy.column")
    key = group_columns.expression(request.group_by, "groupBy")
    # ``job_states`` (one row per job) only when a state is asked for: a level reads every
    # matching job, and joining a second table doubles what it reads.
    by_state = bool(request.filter.states) or any(
        level.column == "state" for level in [request.group_by, *within]
    )
    # The key is named once, in a subquery: PostgreSQL takes a key with bound parameters
    # (an annotation's JSON path) in SELECT and GROUP BY for two different expressions.
    matching = (
        select(key.label("value"), _jobs.c.cpu_millis, _jobs.c.memory_bytes, _jobs.c.gpu)
        .select_from(schema.jobs_and_states if by_state else _jobs)
        .where(filters.conditions(request.filter, readable, by_state=by_state, joined=by_state))
        .subquery()
    )
    count = func.count().label("count")
    sums = [func.sum(matching.c[name]).label(name) for name in ("cpu_millis", "memory_bytes", "gpu")]
    by: dict[str, ColumnElement[Any]] = {
        "count": count,
        "value": matching.c.value,
        "cpuMillis": sums[0],
        "memoryBytes": sums[1],
        "gpu": sums[2],
    }
    first = by[request.order.field]
    order = [first.desc() if request.order.direction == "desc" else first.asc()]
    if request.order.field != "value":
        order.append(matching.c.value.asc())
    return (
        select(matching.c.value, count, *sums)
        .group_by(matching.c.value)
        .order_by(*order)
        .offset(request.skip)
        .limit(request.take + 1)
    )


async def group_jobs(
    store: EventStore, request: GroupJobsRequest, readable: Collection[str] | None
) -> GroupJobsResponse:
    """The groups of ``request.groupBy`` with their job counts and summed requests."""
    async with store.engine.connect() as conn:
        job_filter = await searches.resolved(conn, request.filter)
        query = groups_query(msgspec.structs.replace(request, filter=job_filter), readable)
        rows = (await conn.execute(query)).all()
    groups = [
        GroupAggregate(
            value=value, count=int(count), cpu_millis=int(cpu), memory_bytes=int(memory), gpu=int(gpu)
        )
        for value, count, cpu, memory, gpu in rows[: request.take]
    ]
    return GroupJobsResponse(groups=groups, has_more=len(rows) > request.take)
