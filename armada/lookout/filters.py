"""A :class:`JobFilter` as SQL conditions on the ``jobs`` view.

Each condition is written so that an index can serve it: queue, job set and state are
equalities on indexed columns, and a job-id prefix is a primary-key range (ULIDs use only
``0-9a-z``, so every id with the prefix lies between the prefix and the prefix padded with
``z``). Annotations are read with SQLAlchemy's JSON operators, which render as
``json_extract`` on SQLite and ``->>`` on PostgreSQL: the dialect difference lives there.
The key becomes part of a JSON path on SQLite (``$."key"``), where a ``"`` or ``\\`` would
make the path malformed and the query fail; such keys (never valid Kubernetes annotation
keys) are refused as a 400 instead.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import ColumnElement, and_, true

from armada.eventstore import schema
from armada.lookout.wire import JobFilter
from armada.model.errors import InvalidRequest

ULID_LENGTH = 26


def conditions(job_filter: JobFilter, readable: Collection[str] | None = None) -> ColumnElement[bool]:
    """All of the filter's conditions joined with AND (``true`` when it filters nothing),
    within the ``readable`` queues unless that is ``None`` (the caller may read them all)."""
    jobs = schema.jobs
    parts: list[ColumnElement[Any]] = []
    if readable is not None:
        parts.append(jobs.c.queue.in_(sorted(readable)))
    if job_filter.queue:
        parts.append(jobs.c.queue == job_filter.queue)
    if job_filter.job_set:
        parts.append(jobs.c.job_set_id == job_filter.job_set)
    if job_filter.states:
        states = sorted(set(job_filter.states))
        parts.append(jobs.c.state == states[0] if len(states) == 1 else jobs.c.state.in_(states))
    if job_filter.job_id:
        prefix = job_filter.job_id.strip().lower()[:ULID_LENGTH]
        parts.append(jobs.c.job_id.between(prefix, prefix.ljust(ULID_LENGTH, "z")))
    if job_filter.owner:
        parts.append(jobs.c.owner == job_filter.owner)
    for key, value in sorted(job_filter.annotations.items()):
        if '"' in key or "\\" in key:
            raise InvalidRequest(
                f"annotation key {key!r} must not contain double quotes or backslashes",
                field="filter.annotations",
            )
        parts.append(jobs.c.annotations[key].as_string() == value)
    if job_filter.submitted_from is not None:
        parts.append(jobs.c.submitted >= job_filter.submitted_from)
    if job_filter.submitted_to is not None:
        parts.append(jobs.c.submitted < job_filter.submitted_to)
    return and_(true(), *parts)
