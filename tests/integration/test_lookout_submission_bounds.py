"""Bounds on the submission time, which Lookout also states on the job id
(``armada.lookout.minted``), on SQLite and PostgreSQL: jobs whose ids were minted up to the
slack before or after their submission time must match exactly as their ``submitted`` says,
in every bound kind and sort order; and submissions keep their time in their ids' millisecond.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.views import utc
from armada.lookout.grouping import group_jobs
from armada.lookout.jobs import count_jobs, jobs_page
from armada.lookout.minted import SLACK
from armada.lookout.wire import (
    ColumnMatch,
    CountRequest,
    GroupJobsRequest,
    GroupKey,
    JobFilter,
    JobsRequest,
    Order,
)
from armada.model.ids import DIGITS, TIME_DIGITS, minted_at, new_job_ids, time_prefix
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequest
from armada.services.pod_policy import QueueSecurityGate
from armada.services.queues import create_queue
from armada.services.submission import submit_jobs
from armada.services.validation import SubmissionRules
from armada.settings import Settings
from tests.api.jobs import item
from tests.factories import make_job, submission

BASE = datetime(2026, 3, 1, 12, 0, 0, 500, tzinfo=UTC)
MS = timedelta(milliseconds=1)
#: How far each job's id lies from its submission time: the extremes the slack allows
#: (rounded to the id's millisecond both ways), and between.
SKEWS = [
    -SLACK,
    -SLACK + MS,
    -timedelta(minutes=3),
    -MS,
    timedelta(0),
    MS,
    timedelta(minutes=7),
    SLACK - MS,
    SLACK,
]


def _job_id(minted: datetime, rng: random.Random) -> str:
    return time_prefix(minted) + "".join(rng.choices(DIGITS, k=26 - TIME_DIGITS))


async def _jobs(database: Database) -> dict[str, datetime]:
    """Jobs submitted around ``BASE``, each with an id minted at a skew from its submission."""
    rng = random.Random(3)
    submitted: dict[str, datetime] = {}
    events = []
    for index in range(240):
        at = BASE + timedelta(seconds=rng.randint(-1800, 1800), microseconds=rng.randint(0, 999_999))
        minted = at + SKEWS[index % len(SKEWS)]
        job = make_job(job_id=_job_id(minted, rng), queue="queue-a" if index % 3 else "queue-b")
        submitted[job.id] = at
        events += submission(job, at)
    await database.store.append(events)
    return submitted


def _bounds(rng: random.Random, submitted: dict[str, datetime]) -> list[tuple[str, JobFilter, set[str]]]:
    """Filters bounding the submission time near the jobs' own times (and exactly at them),
    with the jobs each must return."""
    cases: list[tuple[str, JobFilter, set[str]]] = []
    times = sorted(submitted.values())
    times_of = list(submitted.values())
    for _ in range(12):
        low, high = sorted(rng.sample(times, 2))
        low += rng.choice([timedelta(0), MS / 2, -MS / 2])  # exactly a job's time, or just beside it
        high += rng.choice([timedelta(0), MS / 2, -MS / 2])
        cases += _cases(submitted, low, high)
    # Right beside the jobs whose ids lie furthest from their submission: a bound one
    # microsecond past such a job's time still lets it through.
    for index in (8, 17, 26, 35):  # SKEWS[8] == SLACK: minted furthest after submission
        at = times_of[index]
        cases += _cases(submitted, at - 3 * MS, at + timedelta(microseconds=1))
    for index in (0, 9, 18, 27):  # SKEWS[0] == -SLACK: minted furthest before
        at = times_of[index]
        cases += _cases(submitted, at - timedelta(microseconds=1), at + 3 * MS) + _cases(submitted, at, at)
    return cases


def _cases(
    submitted: dict[str, datetime], low: datetime, high: datetime
) -> list[tuple[str, JobFilter, set[str]]]:
    """Each kind of bound at ``low`` and ``high``, with the jobs it must return."""

    def jobs(test: Callable[[datetime], bool]) -> set[str]:
        return {job_id for job_id, at in submitted.items() if test(at)}

    def match(kind: str, at: datetime) -> ColumnMatch:
        return ColumnMatch(column="submitted", match=kind, value=at.isoformat())  # type: ignore[arg-type]

    in_b = _queue_b(submitted)
    return [
        ("from", JobFilter(submitted_from=low), jobs(lambda t: t >= low)),
        ("to", JobFilter(submitted_to=high), jobs(lambda t: t < high)),
        ("window", JobFilter(submitted_from=low, submitted_to=high), jobs(lambda t: low <= t < high)),
        ("greaterThan", JobFilter(matches=[match("greaterThan", low)]), jobs(lambda t: t > low)),
        ("lessThan", JobFilter(matches=[match("lessThan", high)]), jobs(lambda t: t < high)),
        ("exact", JobFilter(matches=[match("exact", low)]), jobs(lambda t: t == low)),
        (
            "window in a queue",
            JobFilter(queue="queue-b", matches=[match("greaterThan", low), match("lessThan", high)]),
            jobs(lambda t: low < t < high) & in_b,
        ),
    ]


def _queue_b(submitted: dict[str, datetime]) -> set[str]:
    return {job_id for index, job_id in enumerate(submitted) if index % 3 == 0}


@pytest.mark.parametrize("order", ["submitted", "lastTransition", "priority"])
async def test_time_bounds_match_exactly_what_submitted_says(database: Database, order: str) -> None:
    submitted = await _jobs(database)
    for name, job_filter, expected in _bounds(random.Random(order), submitted):
        for direction in ("asc", "desc"):
            request = JobsRequest(filter=job_filter, order=Order(field=order, direction=direction), take=500)  # type: ignore[arg-type]
            page = await jobs_page(database.store, request, None)
            assert sorted(row.job_id for row in page.jobs) == sorted(expected), (name, direction)
        counted = await count_jobs(database.store, CountRequest(filter=job_filter), None)
        assert counted.count == len(expected), name
        by_queue = GroupJobsRequest(group_by=GroupKey(column="queue"), filter=job_filter)
        groups = await group_jobs(database.store, by_queue, None)
        assert sum(group.count for group in groups.groups) == len(expected), name


async def test_submissions_lie_in_their_ids_millisecond(database: Database) -> None:
    """Also after a clock step back, when the id counter is ahead of the clock: the ids then
    keep the counter's millisecond and the submission takes its time from them."""
    gate = QueueSecurityGate(may_administer=True, reserved_namespaces=frozenset())
    await create_queue(database.store, Queue(name="queue-a"), "admin", gate)
    rules = SubmissionRules.from_settings(Settings())
    request = JobSubmitRequest(
        queue="queue-a", job_set_id="set", job_request_items=[item() for _ in range(3)]
    )
    on_time = await submit_jobs(database.store, request, rules, "alice")
    (ahead,) = new_job_ids(1, datetime.now(UTC) + timedelta(seconds=2))  # as if the clock stepped back 2 s
    try:
        stepped = await submit_jobs(database.store, request, rules, "alice")
    finally:  # let the clock pass the counter again before other tests mint ids
        await asyncio.sleep(max(0.0, (minted_at(ahead) - datetime.now(UTC)).total_seconds() + 0.01))
    async with database.engine.connect() as conn:
        rows = {row.job_id: utc(row.submitted) for row in await conn.execute(select(schema.jobs))}
    assert set(rows) == {
        item.job_id for response in (on_time, stepped) for item in response.job_response_items
    }
    for job_id, submitted in rows.items():
        assert minted_at(job_id) <= submitted < minted_at(job_id) + MS
    assert {rows[item.job_id] for item in stepped.job_response_items} == {minted_at(ahead)}
