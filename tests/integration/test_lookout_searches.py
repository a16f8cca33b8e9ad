"""Text searches on namespace and node, which Lookout turns into the list of values they match
(``armada.lookout.searches``), on SQLite and PostgreSQL: pages, counts and groups return
exactly the jobs whose own column matches, with matches in the middle of a value, in another
case, with ``%`` and ``_`` taken literally, beside nodes only an earlier run was on, with
no value matching and with more values matching than a list takes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from sqlalchemy import select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.lookout.grouping import group_jobs
from armada.lookout.jobs import count_jobs, jobs_page
from armada.lookout.searches import MOST_VALUES
from armada.lookout.wire import (
    ColumnMatch,
    CountRequest,
    GroupJobsRequest,
    GroupKey,
    JobFilter,
    JobsRequest,
    Order,
)
from armada.model import events as ev
from armada.model.ids import new_run_id
from tests.factories import make_job, submission

START = datetime(2026, 3, 1, tzinfo=UTC)
NAMESPACES = ["Team-Alpha", "team-alphabet", "beta", "gamma_50%", "gamma-50x", "ALPHA-ops"]
#: Many node names contain "rack": more than a list of values takes.
NODES = ["node-A7", "node-a70", "NODE-b7", "gpu-7a", "x_1%", "xy1z"] + [
    f"rack-{i}" for i in range(MOST_VALUES + 5)
]


def _lease(job: object, node: str, at: datetime) -> ev.JobLeased:
    envelope = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}  # type: ignore[attr-defined]
    return ev.JobLeased(**envelope, run_id=new_run_id(), created=at, cluster_id="c", node_id=node)


async def _jobs(database: Database) -> None:
    """Jobs in each namespace; most leased to a node, some leased twice (the first node
    only on an earlier run), some never leased."""
    events: list[ev.Event] = []
    for index in range(3 * len(NODES)):
        at = START + timedelta(seconds=index)
        job = make_job(queue="queue-a" if index % 2 else "queue-b")
        job = msgspec.structs.replace(job, namespace=NAMESPACES[index % len(NAMESPACES)])
        events += submission(job, at)
        if index % 5 == 4:
            continue  # never leased: no node
        if index % 4 == 1:  # an earlier run on another node, returned
            first = _lease(job, NODES[(index + 1) % len(NODES)], at)
            returned = {
                key: getattr(first, key) for key in ("queue", "job_set_id", "job_id", "run_id", "created")
            }
            events += [first, ev.JobLeaseReturned(**returned)]
        events.append(_lease(job, NODES[index % len(NODES)], at + timedelta(milliseconds=1)))
    await database.store.append(events)


def _search(column: str, match: str, value: str) -> JobFilter:
    return JobFilter(matches=[ColumnMatch(column=column, match=match, value=value)])  # type: ignore[arg-type]


SEARCHES = [
    ("namespace", "contains", "alpha"),  # in the middle, in another case, several values
    ("namespace", "contains", "-OPS"),  # one value
    ("namespace", "startsWith", "team-"),
    ("namespace", "startsWith", "ALPHA"),
    ("namespace", "contains", "50%"),  # literally: not gamma-50x
    ("namespace", "contains", "a_5"),  # literally: none
    ("namespace", "contains", "delta"),  # none
    ("node", "contains", "a7"),  # node-A7 and node-a70, not gpu-7a
    ("node", "contains", "7"),  # many, and rack-7, rack-17, ...
    ("node", "startsWith", "NODE-"),
    ("node", "contains", "_1%"),  # literally: x_1% only, not xy1z
    ("node", "contains", "rack"),  # more values than a list takes
    ("node", "startsWith", "absent"),
]


@pytest.mark.parametrize(("column", "match", "value"), SEARCHES)
async def test_searches_match_exactly_the_jobs_whose_value_matches(
    database: Database, column: str, match: str, value: str
) -> None:
    await _jobs(database)
    jobs = schema.jobs
    async with database.engine.connect() as conn:
        rows = (await conn.execute(select(jobs.c.job_id, jobs.c.queue, jobs.c[column]))).all()
    found = value.lower()
    expected = {
        row.job_id
        for row in rows
        if row[2] is not None
        and (row[2].lower().startswith(found) if match == "startsWith" else found in row[2].lower())
    }
    job_filter = _search(column, match, value)
    for order in ("submitted", "lastTransition", "priority"):
        request = JobsRequest(filter=job_filter, order=Order(field=order), take=500)
        page = await jobs_page(database.store, request, None)
        assert {row.job_id for row in page.jobs} == expected, order
    in_a = msgspec.structs.replace(job_filter, queue="queue-a")
    page = await jobs_page(database.store, JobsRequest(filter=in_a, take=500), None)
    assert {row.job_id for row in page.jobs} == {
        row.job_id for row in rows if row.queue == "queue-a"
    } & expected
    assert (await count_jobs(database.store, CountRequest(filter=job_filter), None)).count == len(expected)
    groups = await group_jobs(
        database.store, GroupJobsRequest(group_by=GroupKey(column="queue"), filter=job_filter), None
    )
    assert sum(group.count for group in groups.groups) == len(expected)
