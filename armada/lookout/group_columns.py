"""The columns jobs are grouped by, as SQL expressions on ``jobs`` joined with ``job_states``.

Every expression is text, with ``""`` for a job without a value (a queued job's node, an
annotation the job lacks), so a group's value can be named again as a condition
(:func:`within`): the jobs inside a group, and the groups one level further in, are the
same query as the table's with one more condition per enclosing group. The pool is the
latest run's (a correlated read of ``runs`` by primary key, ``""`` before any run).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, exists, func, select

from armada.eventstore import schema
from armada.lookout.wire import GroupKey, GroupValue
from armada.model.errors import InvalidRequest

_jobs = schema.jobs
#: ``runs`` under its own name: a query of the table's rows joins ``runs`` already.
_latest = schema.runs.alias("latest_run")
_COLUMNS: dict[str, ColumnElement[Any]] = {
    "queue": _jobs.c.queue,
    "jobSet": _jobs.c.job_set_id,
    "state": schema.job_states.c.state,
    "owner": _jobs.c.owner,
    "namespace": _jobs.c.namespace,
    "priorityClass": _jobs.c.priority_class,
    "cluster": _jobs.c.cluster,
    "node": _jobs.c.node,
    "pool": select(_latest.c.pool)
    .where(_latest.c.run_id == _jobs.c.latest_run_id)
    .correlate(_jobs)
    .scalar_subquery(),
}

_NULLABLE = {"cluster", "node", "pool"}


def annotation_value(key: str, field: str) -> ColumnElement[Any]:
    """An annotation's value as text (``NULL`` when absent).

    The key becomes part of a JSON path on SQLite (``$."key"``), where a ``"`` or ``\\``
    would make the path malformed and the query fail: such keys (never valid Kubernetes
    annotation keys) are refused, naming ``field``.
    """
    if '"' in key or "\\" in key:
        raise InvalidRequest(
            f"annotation key {key!r} must not contain double quotes or backslashes", field=field
        )
    value: ColumnElement[Any] = _jobs.c.annotations[key].as_string()
    return value


def expression(key: GroupKey, field: str) -> ColumnElement[str]:
    """The text a job is grouped by under ``key`` (``field`` names the key in errors)."""
    if key.column == "annotation":
        if not key.annotation:
            raise InvalidRequest("grouping by an annotation needs its key", field=f"{field}.annotation")
        column = annotation_value(key.annotation, f"{field}.annotation")
    elif key.annotation:
        raise InvalidRequest(
            f"an annotation key applies to column 'annotation', not {key.column!r}",
            field=f"{field}.annotation",
        )
    else:
        column = _COLUMNS[key.column]
        if key.column not in _NULLABLE:
            return column  # as it is, so that its index serves a condition on it
    return func.coalesce(column, "")


def within(group: GroupValue, index: int) -> ColumnElement[bool]:
    """The condition for jobs in ``group``, the filter's ``index``-th enclosing group.

    A pool is a semi-join with the latest run rather than a test of the correlated read:
    the planner estimates how many jobs a pool holds (the read is a guess of 0.1%, so
    PostgreSQL read every job and sorted them for a page) and walks a page's sort order.
    """
    if group.column == "pool" and group.value:
        return exists().where(_latest.c.run_id == _jobs.c.latest_run_id, _latest.c.pool == group.value)
    return expression(group, f"filter.within[{index}]") == group.value


def same(one: GroupKey, other: GroupKey) -> bool:
    return (one.column, one.annotation) == (other.column, other.annotation)
