"""The jobs table and its groups: server-side filtered, sorted, paginated reads of ``jobs``.

Pages are ordered by the sort column with the job id as tie-breaker, so an index on
``(queue, …)`` or ``(state, …)`` in that order returns a page without sorting the whole
match; "submitted" sorts by the job id itself (ULIDs order by submission time). A page
reads one row more than it shows to know whether another follows, and the total is a
separate, capped count: counting a million matches costs far more than a page of them,
and "10,000+" is all a person needs to know. Every read is limited to the ``readable``
queues (``None``: all), so a caller never sees jobs of queues it may not watch.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec
from sqlalchemy import ColumnElement, Row, func, literal, select, union_all

from armada.eventstore import schema
from armada.eventstore.store import EventStore
from armada.eventstore.views import utc
from armada.lookout import filters, searches
from armada.lookout.wire import (
    CountRequest,
    CountResponse,
    GroupsRequest,
    GroupsResponse,
    JobGroup,
    JobRow,
    JobsRequest,
    JobsResponse,
    Order,
)
from armada.model.lifecycle import JobState

COUNT_LIMIT = 10_000
#: The queues a caller may read, or ``None`` for all of them.
Readable = Collection[str] | None

_jobs, _states, _runs = schema.jobs, schema.job_states, schema.runs
#: The columns a table row shows (never the spec: it is the largest column by far).
ROW_COLUMNS = (
    _jobs.c.job_id,
    _jobs.c.queue,
    _jobs.c.job_set_id,
    _jobs.c.owner,
    _jobs.c.namespace,
    _jobs.c.priority,
    _jobs.c.priority_class,
    _jobs.c.state,
    _jobs.c.submitted,
    _jobs.c.last_transition,
    _jobs.c.cpu_millis,
    _jobs.c.memory_bytes,
    _jobs.c.gpu,
    _jobs.c.annotations,
    _jobs.c.cluster,
    _jobs.c.node,
    _jobs.c.exit_code,
    _jobs.c.reason,
    _jobs.c.cancel_requested,
    _runs.c.started.label("run_started"),
    _runs.c.finished.label("run_finished"),
)
_SORT_COLUMNS = {
    "submitted": (),
    "lastTransition": (_states.c.last_transition,),
    "priority": (_jobs.c.priority,),
}
_GROUP_COLUMNS = {"queue": (_states.c.queue,), "jobSet": (_jobs.c.queue, _jobs.c.job_set_id), "state": ()}


def _order_by(order: Order) -> list[ColumnElement[Any]]:
    return _sorted(order.direction, *_SORT_COLUMNS[order.field], _jobs.c.job_id)


def job_row(row: Row[Any]) -> JobRow:
    """A table row from a ``jobs`` row joined with its latest run."""
    return JobRow(
        job_id=row.job_id,
        queue=row.queue,
        job_set=row.job_set_id,
        owner=row.owner,
        namespace=row.namespace,
        priority=row.priority,
        priority_class=row.priority_class,
        state=row.state,
        submitted=utc(row.submitted),
        last_transition=utc(row.last_transition),
        cpu_millis=row.cpu_millis,
        memory_bytes=row.memory_bytes,
        gpu=row.gpu,
        annotations=row.annotations or {},
        cluster=row.cluster or "",
        node=row.node or "",
        exit_code=row.exit_code,
        reason=row.reason or "",
        run_started=utc(row.run_started),
        run_finished=utc(row.run_finished),
        cancel_requested=row.cancel_requested,
    )


def rows_query(where: ColumnElement[bool]) -> Any:
    """``jobs`` rows matching ``where`` (on ``schema.jobs_and_states``) with their latest
    run's start and finish."""
    joined = schema.jobs_and_states.outerjoin(_runs, _runs.c.run_id == _jobs.c.latest_run_id)
    return select(*ROW_COLUMNS).select_from(joined).where(where)


def page_query(request: JobsRequest, readable: Collection[str] | None) -> Any:
    """The rows of a page, and one more (to know whether another page follows).

    Two kinds of page pick their job ids from ``job_states`` first and read only those
    rows from ``jobs`` (a ``jobs`` row carries the spec: reading one for every match
    before sorting costs far more than the page):

    - sorted by last transition of more than one state: the states' own sorted lists are
      merged, each one range of the ``(queue, state, last_transition)`` or ``(state,
      last_transition)`` index, while no index sorts several states together (one would
      cost every state change another index entry);
    - sorted by submission, filtered by state and by nothing only ``jobs`` holds: the
      matching ``job_states`` entries are sorted by job id (SQLite otherwise joins every
      match with its ``jobs`` row, then sorts).
    """
    states: list[str] = sorted(set(request.filter.states)) or [state.value for state in JobState]
    direction = request.order.direction
    if request.order.field == "lastTransition" and len(states) > 1:
        page = _merged_by_transition(request, readable, states)
        return _rows_of(page, _sorted(direction, page.c.last_transition, page.c.job_id))
    by_state_alone = request.filter.states and not filters.needs_jobs(request.filter)
    if request.order.field == "submitted" and by_state_alone:
        ids = (
            select(_states.c.job_id)
            .where(filters.conditions(request.filter, readable, with_jobs=False))
            .order_by(*_sorted(direction, _states.c.job_id))
            .offset(request.skip)
            .limit(request.take + 1)
            .subquery()
        )
        return _rows_of(ids, _sorted(direction, ids.c.job_id))
    query = rows_query(filters.conditions(request.filter, readable)).order_by(*_order_by(request.order))
    return query.offset(request.skip).limit(request.take + 1)


def _merged_by_transition(request: JobsRequest, readable: Collection[str] | None, states: list[str]) -> Any:
    """The page's job ids and last transitions, merged from one sorted list per state."""
    with_jobs = filters.needs_jobs(request.filter)
    where = filters.conditions(request.filter, readable, with_jobs=with_jobs, by_state=True)
    source = schema.jobs_and_states if with_jobs else _states
    enough = request.skip + request.take + 1
    branches = [
        select(_states.c.job_id, _states.c.last_transition)
        .select_from(source)
        .where(where, _states.c.state == state)
        .order_by(*_sorted(request.order.direction, _states.c.last_transition, _states.c.job_id))
        .limit(enough)
        .subquery()
        for state in states
    ]
    merged = union_all(*(select(*branch.c) for branch in branches)).subquery()
    merged_order = _sorted(request.order.direction, merged.c.last_transition, merged.c.job_id)
    return select(merged).order_by(*merged_order).offset(request.skip).limit(request.take + 1).subquery()


def _rows_of(page: Any, order: list[ColumnElement[Any]]) -> Any:
    """The ``jobs`` rows of ``page`` (a subquery of job ids) with their latest run, in
    ``order`` (the page's own)."""
    joined = page.join(_jobs, _jobs.c.job_id == page.c.job_id).outerjoin(
        _runs, _runs.c.run_id == _jobs.c.latest_run_id
    )
    return select(*ROW_COLUMNS).select_from(joined).order_by(*order)


def _sorted(direction: str, *keys: ColumnElement[Any]) -> list[ColumnElement[Any]]:
    return [key.desc() if direction == "desc" else key.asc() for key in keys]


async def jobs_page(
    store: EventStore, request: JobsRequest, readable: Collection[str] | None
) -> JobsResponse:
    async with store.engine.connect() as conn:
        request = msgspec.structs.replace(request, filter=await searches.resolved(conn, request.filter))
        rows = (await conn.execute(page_query(request, readable))).all()
    return JobsResponse(
        jobs=[job_row(row) for row in rows[: request.take]], has_more=len(rows) > request.take
    )


async def count_jobs(
    store: EventStore, request: CountRequest, readable: Collection[str] | None
) -> CountResponse:
    """Jobs matching the filter, up to :data:`COUNT_LIMIT`."""
    async with store.engine.connect() as conn:
        job_filter = await searches.resolved(conn, request.filter)
        with_jobs = filters.needs_jobs(job_filter)
        matches = filters.conditions(job_filter, readable, with_jobs=with_jobs)
        source = schema.jobs_and_states if with_jobs else _states
        capped = select(_states.c.job_id).select_from(source).where(matches).limit(COUNT_LIMIT + 1)
        count = int(await conn.scalar(select(func.count()).select_from(capped.subquery())) or 0)
    return CountResponse(count=min(count, COUNT_LIMIT), capped=count > COUNT_LIMIT)


async def job_groups(
    store: EventStore, request: GroupsRequest, readable: Collection[str] | None
) -> GroupsResponse:
    """Counts by state for each group; job sets newest first, other groups largest first.

    Queue and state groups of a filter on queue, state or id prefix count from a
    ``job_states`` index alone; job sets and other filters also read each job's ``jobs`` row.
    """
    job_sets = request.group_by == "jobSet"
    keys = _GROUP_COLUMNS[request.group_by]
    latest = func.max(_jobs.c.job_id) if job_sets else literal("")
    async with store.engine.connect() as conn:
        job_filter = await searches.resolved(conn, request.filter)
        with_jobs = job_sets or filters.needs_jobs(job_filter)
        query = (
            select(*keys, _states.c.state, func.count(), latest)
            .select_from(schema.jobs_and_states if with_jobs else _states)
            .where(filters.conditions(job_filter, readable, with_jobs=with_jobs))
            .group_by(*keys, _states.c.state)
        )
        rows = (await conn.execute(query)).all()
    groups: dict[tuple[str, ...], JobGroup] = {}
    for row in rows:
        *key, state, count, newest = row
        name = tuple(key) or (state,)
        group = groups.get(name)
        if group is None:
            group = groups[name] = JobGroup(name=name[-1], queue=name[0] if job_sets else "")
        group.count += count
        group.latest_job_id = max(group.latest_job_id, newest)
        group.states[state] = count
    if job_sets:
        ordered = sorted(groups.values(), key=lambda g: g.latest_job_id, reverse=True)
    else:
        ordered = sorted(groups.values(), key=lambda g: (-g.count, g.name))
    return GroupsResponse(groups=ordered[: request.take])
