"""A :class:`JobFilter` as SQL conditions on the ``jobs`` view joined with ``job_states``.

Each condition is written so that an index can serve it: queue, job set and state are
equalities on indexed columns, and a job-id prefix is a primary-key range (ULIDs use only
``0-9a-z``, so every id with the prefix lies between the prefix and the prefix padded with
``z``). State is a condition on ``job_states`` (which alone indexes it), and a filter of
queue, state and id prefix only can be answered from ``job_states`` alone
(:func:`needs_jobs`).
Annotations are read with SQLAlchemy's JSON operators, which render as
``json_extract`` on SQLite and ``->>`` on PostgreSQL: the dialect difference lives there
(:func:`group_columns.annotation_value`). A bound on the submission time is a bound on
the job id too (:mod:`minted`). ``within`` (the enclosing groups of nested
grouping) is one condition per group (:func:`group_columns.within`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import ColumnElement, and_, true

from armada.eventstore import schema
from armada.lookout import group_columns, matches, minted
from armada.lookout.wire import JobFilter

ULID_LENGTH = 26


def needs_jobs(job_filter: JobFilter) -> bool:
    """Whether the filter reads a column only ``jobs`` has (else ``job_states`` answers it)."""
    return bool(
        job_filter.job_set
        or job_filter.owner
        or job_filter.annotations
        or job_filter.submitted_from is not None
        or job_filter.submitted_to is not None
        or job_filter.matches
        or job_filter.within
    )


def conditions(
    job_filter: JobFilter,
    readable: Collection[str] | None = None,
    *,
    with_jobs: bool = True,
    by_state: bool | None = None,
    joined: bool = True,
) -> ColumnElement[bool]:
    """All of the filter's conditions joined with AND (``true`` when it filters nothing),
    within the ``readable`` queues unless that is ``None`` (the caller may read them all).

    They are on ``schema.jobs_and_states``, or on ``job_states`` alone without ``with_jobs``
    (for a filter that :func:`needs_jobs` says needs nothing else). Queue and id prefix are
    stated on one table only — ``job_states`` when the rows are found ``by_state`` (by
    default: when the filter names states), else ``jobs`` — since the planner takes such
    conditions on both sides of the join as independent and underestimates the match
    by the square, then sorts thousands of joined rows for a page. ``joined``: whether the
    query joins ``job_states`` to ``jobs`` (a submission time's id bound is on both then).
    """
    on_states = not with_jobs or (bool(job_filter.states) if by_state is None else by_state)
    table = schema.job_states if on_states else schema.jobs
    jobs = schema.jobs
    parts: list[ColumnElement[Any]] = []
    if readable is not None:
        parts.append(table.c.queue.in_(sorted(readable)))
    if job_filter.queue:
        parts.append(table.c.queue == job_filter.queue)
    if job_filter.job_id:
        prefix = job_filter.job_id.strip().lower()[:ULID_LENGTH]
        parts.append(table.c.job_id.between(prefix, prefix.ljust(ULID_LENGTH, "z")))
    if job_filter.states:
        state = schema.job_states.c.state
        states = sorted(set(job_filter.states))
        parts.append(state == states[0] if len(states) == 1 else state.in_(states))
    if not with_jobs:
        return and_(true(), *parts)
    if job_filter.job_set:
        parts.append(jobs.c.job_set_id == job_filter.job_set)
    if job_filter.owner:
        parts.append(jobs.c.owner == job_filter.owner)
    for key, value in sorted(job_filter.annotations.items()):
        parts.append(group_columns.annotation_value(key, "filter.annotations") == value)
    if job_filter.submitted_from is not None:
        parts += [
            jobs.c.submitted >= job_filter.submitted_from,
            minted.submitted_from(job_filter.submitted_from, joined),
        ]
    if job_filter.submitted_to is not None:
        parts += [
            jobs.c.submitted < job_filter.submitted_to,
            minted.submitted_before(job_filter.submitted_to, joined),
        ]
    parts += [matches.condition(match, index, joined) for index, match in enumerate(job_filter.matches)]
    parts += [group_columns.within(group, index) for index, group in enumerate(job_filter.within)]
    return and_(true(), *parts)
