"""Column matches (:class:`ColumnMatch`) as SQL conditions on the ``jobs`` view.

Text matches that search (``startsWith``, ``contains``) compare lower-cased text with
``LIKE`` and escape the user's ``%`` and ``_``, so they mean the same on SQLite (whose
``LIKE`` ignores ASCII case) and PostgreSQL (whose ``LIKE`` does not). Such searches read
every job the other conditions leave: narrow by queue, state or time first on large
databases. A match that does not suit its column, or a value that is not a number or a
time where one is needed, is refused as a 400 naming ``filter.matches[i]``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, get_args

from sqlalchemy import ColumnElement, and_, select

from armada.eventstore import schema
from armada.lookout import minted
from armada.lookout.wire import ColumnMatch, NumberColumn, TextColumn, TimeColumn
from armada.model.errors import InvalidRequest

_jobs = schema.jobs
_COLUMNS = {
    "queue": _jobs.c.queue,
    "jobSet": _jobs.c.job_set_id,
    "owner": _jobs.c.owner,
    "namespace": _jobs.c.namespace,
    "priorityClass": _jobs.c.priority_class,
    "cluster": _jobs.c.cluster,
    "node": _jobs.c.node,
    "reason": _jobs.c.reason,
    "priority": _jobs.c.priority,
    "cpuMillis": _jobs.c.cpu_millis,
    "memoryBytes": _jobs.c.memory_bytes,
    "gpu": _jobs.c.gpu,
    "exitCode": _jobs.c.exit_code,
    "submitted": _jobs.c.submitted,
    "lastTransition": _jobs.c.last_transition,
}
_TEXT, _NUMBER, _TIME = set(get_args(TextColumn)), set(get_args(NumberColumn)), set(get_args(TimeColumn))
_SUITS = {
    "exact": _TEXT | _NUMBER | _TIME,
    "startsWith": _TEXT,
    "contains": _TEXT,
    "anyOf": _TEXT | _NUMBER,
    "exists": _TEXT,
    "greaterThan": _NUMBER | _TIME,
    "lessThan": _NUMBER | _TIME,
}


def condition(match: ColumnMatch, index: int, joined: bool) -> ColumnElement[bool]:
    """The SQL condition of the filter's ``index``-th match (``joined``: whether the query
    joins ``job_states``, see :func:`.minted.submitted_from`)."""
    where = f"filter.matches[{index}]"
    if match.column not in _SUITS[match.match]:
        raise InvalidRequest(
            f"{match.match!r} does not apply to column {match.column!r}", field=f"{where}.match"
        )
    column: ColumnElement[Any] = _COLUMNS[match.column]
    if match.match == "exists":
        return and_(column.is_not(None), column != "")
    if match.match == "anyOf":
        values = [_typed(match.column, value, f"{where}.values") for value in match.values]
        # Text is tested as ``column || ''``, which no index serves: the page then walks its
        # sort order. SQLite (no statistics) otherwise reads an index range per value, all
        # of a common namespace's jobs, and sorts them (2-15 s at 1,000,000 jobs).
        tested = column.concat("") if match.column in _TEXT else column
        return _on_node(match.column, tested.in_(values), schema.runs.c.node.in_(values))
    value = _typed(match.column, match.value, f"{where}.value")
    if match.match == "startsWith":
        return column.istartswith(value, autoescape=True)
    if match.match == "contains":
        return column.icontains(value, autoescape=True)
    bounds = _minted(match, value, joined)
    if match.match == "greaterThan":
        return and_(column > value, *bounds)
    if match.match == "lessThan":
        return and_(column < value, *bounds)
    return _on_node(match.column, and_(column == value, *bounds), schema.runs.c.node == value)


def _minted(match: ColumnMatch, value: object, joined: bool) -> list[ColumnElement[bool]]:
    """What a bound on the submission time implies for the job id, which indexes serve (see
    :mod:`armada.lookout.minted`); nothing for other columns."""
    if match.column != "submitted" or not isinstance(value, datetime):
        return []
    bounds = []
    if match.match in ("greaterThan", "exact"):
        bounds.append(minted.submitted_from(value, joined))
    if match.match in ("lessThan", "exact"):
        bounds.append(minted.submitted_before(value, joined))
    return bounds


def _on_node(
    name: str, condition: ColumnElement[bool], ran_there: ColumnElement[bool]
) -> ColumnElement[bool]:
    """A node's jobs are also jobs with a run there: ``ix_runs_node`` finds them (``jobs``
    has no index on the node, see the schema). Other columns' conditions as they are."""
    if name != "node":
        return condition
    return and_(condition, _jobs.c.job_id.in_(select(schema.runs.c.job_id).where(ran_there)))


def _typed(column: str, value: str, field: str) -> object:
    """``value`` as the column's type: text as it is, a number, or a time with its zone."""
    if column in _TEXT:
        return value
    try:
        if column in _NUMBER:
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(value)
            return number
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        kind = "a number" if column in _NUMBER else "an RFC 3339 time"
        raise InvalidRequest(f"{value!r} is not {kind} (column {column!r})", field=field) from None
    if moment.tzinfo is None:
        raise InvalidRequest(f"{value!r} has no time zone (column {column!r})", field=field)
    return moment
