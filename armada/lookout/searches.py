"""Text searches (``startsWith``, ``contains``) on a column with few distinct values, as the
list of values they match.

No b-tree serves ``contains`` (nor a case-blind ``startsWith``), so such a search reads
every job the rest of the filter leaves, and a page of a rare node walks most of ``jobs``.
But namespaces and nodes are few next to jobs, and their indexes (``jobs (namespace,
job_id)``, ``runs (node, job_id)``) list them: one index probe per distinct value (a loose
index scan) finds the values the search matches, and the search becomes an ``exact`` match
of the one value or an ``anyOf`` of several, which the indexes serve. The values are tested
with the search's own condition, so the jobs matched are the same. A job's node is its
latest run's (``runs`` holds every node a job ran on, so it lists every node ``jobs`` does).
A search matching more than :data:`MOST_VALUES` values stays as it is.
"""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import schema
from armada.lookout.wire import MAX_ANY_OF, ColumnMatch, JobFilter

#: Most values a search becomes (an ``anyOf`` takes as many).
MOST_VALUES = MAX_ANY_OF
#: The columns searched through their distinct values, and the indexed column listing them.
_LISTED: dict[str, ColumnElement[Any]] = {"namespace": schema.jobs.c.namespace, "node": schema.runs.c.node}


async def resolved(conn: AsyncConnection, job_filter: JobFilter) -> JobFilter:
    """``job_filter`` with its searches on listed columns as the values they match, when
    those are few enough (else the filter as it is)."""
    if not any(_listed(match) for match in job_filter.matches):
        return job_filter
    matches = [await _as_values(conn, match) if _listed(match) else match for match in job_filter.matches]
    return msgspec.structs.replace(job_filter, matches=matches)


def _listed(match: ColumnMatch) -> bool:
    return match.match in ("startsWith", "contains") and match.column in _LISTED


async def _as_values(conn: AsyncConnection, match: ColumnMatch) -> ColumnMatch:
    column = _LISTED[match.column]
    found = select(func.min(column).label("value")).cte("found", recursive=True)
    following = select(func.min(column)).where(column > found.c.value).scalar_subquery()
    found = found.union_all(select(following).where(found.c.value.is_not(None)))
    value = found.c.value
    search = value.istartswith if match.match == "startsWith" else value.icontains
    query = select(value).where(value.is_not(None), search(match.value, autoescape=True))
    values = list(await conn.scalars(query.limit(MOST_VALUES + 1)))
    if len(values) > MOST_VALUES:
        return match
    if len(values) == 1:
        return ColumnMatch(column=match.column, match="exact", value=values[0])
    return ColumnMatch(column=match.column, match="anyOf", values=values)
