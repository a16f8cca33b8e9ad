"""Lookout's pages on SQLite and PostgreSQL against an order computed here from the rows.

Pages sorted by last transition of several states are merged from one sorted list per
state, and pages of states sorted by submission take their job ids from ``job_states``
first (``lookout.jobs.page_query``); paging through them with every filter shape must
give exactly the rows, in exactly the order, that sorting the whole view gives.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.views import utc
from armada.lookout.jobs import count_jobs, jobs_page
from armada.lookout.wire import CountRequest, JobFilter, JobsRequest, Order
from tests.factories import RandomHistory

FILTERS = [
    {},
    {"states": ["QUEUED", "SUCCEEDED", "CANCELLED"]},
    {"states": ["FAILED"]},
]


async def _history(database: Database) -> list[Any]:
    stream = list(RandomHistory(seed=5).events(2500))
    for start in range(0, len(stream), 50):
        await database.store.append(stream[start : start + 50])
    jobs = schema.jobs
    async with database.engine.connect() as conn:
        query = select(jobs.c.job_id, jobs.c.queue, jobs.c.state, jobs.c.last_transition)
        return list((await conn.execute(query)).all())


def _expected(
    rows: list[Any],
    job_filter: dict[str, Any],
    direction: str,
    order: str = "lastTransition",
    readable: set[str] | None = None,
) -> list[str]:
    states = job_filter.get("states")
    queue = job_filter.get("queue")
    chosen = [
        row
        for row in rows
        if (not states or row.state in states)
        and (not queue or row.queue == queue)
        and row.job_id.startswith(job_filter.get("job_id", ""))
        and (readable is None or row.queue in readable)
    ]
    if order == "lastTransition":
        ordered = sorted(chosen, key=lambda row: (utc(row.last_transition), row.job_id))
    else:  # submitted: job ids (ULIDs) sort by submission
        ordered = sorted(chosen, key=lambda row: row.job_id)
    return [row.job_id for row in (ordered[::-1] if direction == "desc" else ordered)]


def _shared_prefix(ids: list[str], at_least: int) -> str:
    """The longest prefix of the middle id that at least ``at_least`` ids (not all) share."""
    middle = sorted(ids)[len(ids) // 2]
    for length in range(len(middle), 0, -1):
        sharing = sum(job_id.startswith(middle[:length]) for job_id in ids)
        if at_least <= sharing < len(ids):
            return middle[:length]
    raise AssertionError("no prefix picks out a part of the jobs")


@pytest.mark.parametrize("order", ["lastTransition", "submitted"])
@pytest.mark.parametrize("direction", ["desc", "asc"])
async def test_pages_are_the_whole_sorted_view_in_slices(
    database: Database, direction: str, order: str
) -> None:
    rows = await _history(database)
    queues = sorted({row.queue for row in rows})
    assert len({row.state for row in rows}) >= 4 and len(queues) >= 2
    prefix = _shared_prefix([row.job_id for row in rows], at_least=5)
    cases: list[tuple[dict[str, Any], set[str] | None]] = [
        *((f, None) for f in FILTERS),
        *(({**f, "queue": queues[0]}, None) for f in FILTERS),
        *((f, {queues[-1]}) for f in FILTERS),  # a caller who may read one queue only
        *(({**f, "job_id": prefix}, None) for f in FILTERS),
    ]
    for job_filter, readable in cases:
        expected = _expected(rows, job_filter, direction, order, readable)
        assert expected or job_filter.get("states") == ["FAILED"], (job_filter, readable)
        seen: list[str] = []
        for skip in range(0, len(expected) + 7, 7):
            request = JobsRequest(
                filter=JobFilter(**job_filter),
                order=Order(field=order, direction=direction),  # type: ignore[arg-type]
                skip=skip,
                take=7,
            )
            page = await jobs_page(database.store, request, readable)
            seen += [job.job_id for job in page.jobs]
            assert all(job.state in job_filter.get("states", [job.state]) for job in page.jobs)
            assert page.has_more == (skip + 7 < len(expected)), (job_filter, readable, skip)
            if not page.has_more:
                break
        assert seen == expected, (job_filter, readable)
        assert all(isinstance(job.last_transition, datetime) for job in page.jobs)


async def test_counts_from_job_states_alone_agree_with_the_rows(database: Database) -> None:
    rows = await _history(database)
    queue = sorted({row.queue for row in rows})[0]
    for job_filter in [
        {"queue": queue},
        {"states": ["QUEUED", "RUNNING"]},
        {"queue": queue, "states": ["FAILED"]},
    ]:
        expected = len(_expected(rows, job_filter, "asc"))
        counted = await count_jobs(database.store, CountRequest(filter=JobFilter(**job_filter)), None)
        assert (counted.count, counted.capped) == (expected, False), job_filter
