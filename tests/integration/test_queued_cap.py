"""The queued-jobs cap on SQLite and PostgreSQL: counted once, then tracked by what this process
lets in, recounted when a request might not fit or the count is older than ``max_age``.
"""

from __future__ import annotations

import pytest

from armada.eventstore.database import Database
from armada.model.errors import LimitExceeded
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequest
from armada.services.pod_policy import QueueSecurityGate
from armada.services.queued_cap import QueuedCap
from armada.services.queues import create_queue
from armada.services.submission import submit_jobs
from armada.services.validation import SubmissionRules
from armada.settings import Settings
from tests.api.jobs import item
from tests.factories import make_job, submission

RULES = SubmissionRules.from_settings(Settings())
GATE = QueueSecurityGate(may_administer=True, reserved_namespaces=frozenset())


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def request(count: int) -> JobSubmitRequest:
    return JobSubmitRequest(
        queue="capped", job_set_id="set", job_request_items=[item() for _ in range(count)]
    )


async def queued_behind_our_back(database: Database, count: int) -> None:
    """Jobs another replica queued: this process's cap did not see them go in."""
    async with database.store.transaction() as tx:
        for _ in range(count):
            tx.append(submission(make_job(queue="capped")))


async def test_the_cap_counts_what_it_let_in_and_refuses_on_a_fresh_count(database: Database) -> None:
    store, clock = database.store, Clock()
    cap = QueuedCap(4, max_age=1.0, clock=clock)
    await create_queue(store, Queue(name="capped"), "admin", GATE)
    await submit_jobs(store, request(2), RULES, "alice", queued_cap=cap)
    await queued_behind_our_back(database, 1)  # 3 queued; the cap's bound says 2
    # 2 + 1 fits the bound, so no count is taken: a replica's jobs may pass unseen for max_age.
    await submit_jobs(store, request(1), RULES, "alice", queued_cap=cap)
    # 3 + 1 would still fit the bound (4), but the count is stale now: 4 are queued.
    clock.now = 1.5
    with pytest.raises(LimitExceeded, match="has 4 queued jobs and takes at most 4"):
        await submit_jobs(store, request(1), RULES, "alice", queued_cap=cap)


async def test_a_request_that_may_not_fit_is_judged_on_a_fresh_count(database: Database) -> None:
    store, clock = database.store, Clock()
    cap = QueuedCap(3, max_age=60.0, clock=clock)
    await create_queue(store, Queue(name="capped"), "admin", GATE)
    await submit_jobs(store, request(2), RULES, "alice", queued_cap=cap)
    with pytest.raises(LimitExceeded, match="has 2 queued jobs and takes at most 3"):
        await submit_jobs(store, request(2), RULES, "alice", queued_cap=cap)
    await submit_jobs(store, request(1), RULES, "alice", queued_cap=cap)  # exactly at the cap
    with pytest.raises(LimitExceeded, match="has 3 queued jobs"):
        await submit_jobs(store, request(1), RULES, "alice", queued_cap=cap)


async def test_no_cap_admits_anything_without_counting(database: Database) -> None:
    store = database.store
    await create_queue(store, Queue(name="capped"), "admin", GATE)
    await database.close()  # a count would need the database
    await QueuedCap(0).admit(store, "capped", 1_000_000)
