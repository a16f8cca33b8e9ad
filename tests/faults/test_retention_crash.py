"""SIGKILL the server while it prunes: nothing unexpired is lost, the views stay consistent,
and every job pruned is in the archive with all its events."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.model import events as ev
from armada.services.archive import read_batch
from tests.e2e.cluster import wait_for
from tests.factories import RandomHistory, finished, make_job
from tests.faults.workload import assert_invariants_hold, fault_seed
from tests.processes import running_server

pytestmark = pytest.mark.slow

#: Each job id with its state and its number of events.
Snapshot = dict[str, tuple[str, int]]


async def fill(url: str, seed: int) -> set[str]:
    """A history from January 2026 (its finished jobs have expired), then jobs finished just
    now (returned: they are kept)."""
    database = await Database(url).open(listen=False)
    try:
        stream = list(RandomHistory(seed=seed).events(12_000))
        for start in range(0, len(stream), 500):
            await database.store.append(stream[start : start + 500])
        recent = [make_job().id for _ in range(100)]
        events = [event for job_id in recent for event in finished(job_id, datetime.now(UTC))]
        await database.store.append([*events, ev.ExecutorHeartbeat(executor_id="cluster-1")])
    finally:
        await database.close()
    return set(recent)


async def snapshot(url: str) -> Snapshot:
    database = await Database(url).open(migrate_schema=False, listen=False)
    try:
        # One snapshot of both tables, while a server may be pruning.
        async with database.engine.connect() as raw:
            conn = await raw.execution_options(isolation_level="SERIALIZABLE")
            await conn.begin()
            states = dict((await conn.execute(select(schema.jobs.c.job_id, schema.jobs.c.state))).all())
            events = schema.events
            query = (
                select(events.c.job_id, func.count()).where(events.c.job_id != "").group_by(events.c.job_id)
            )
            counts = dict((await conn.execute(query)).all())
    finally:
        await database.close()
    assert set(counts) == set(states), "a job's events without its view rows, or the other way round"
    return {job_id: (state, counts[job_id]) for job_id, state in states.items()}


def archived(directory: Path) -> dict[str, int]:
    """Each archived job's number of events (a job archived twice has the same events both times)."""
    found: dict[str, int] = {}
    for path in directory.glob("*.jsonl.gz"):
        for job in read_batch(path):
            assert found.setdefault(job.job_id, len(job.events)) == len(job.events)
    return found


def test_a_server_killed_while_pruning_loses_nothing(database_url: str, tmp_path: Path) -> None:
    seed = fault_seed()
    recent = asyncio.run(fill(database_url, seed))
    before = asyncio.run(snapshot(database_url))
    finished_states = {"SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"}
    finished = {job for job, (state, _) in before.items() if state in finished_states}
    expired = finished - recent
    archive = tmp_path / "archive"
    env = {
        "ARMADA_RETENTION_EXPIRE_AFTER": "24h",
        "ARMADA_RETENTION_BATCH_SIZE": "5",
        "ARMADA_RETENTION_ARCHIVE_DIR": str(archive),
        "ARMADA_RETENTION_INTERVAL": "1s",
    }
    with running_server(tmp_path, database_url=database_url, env=env) as server:
        wait_for(lambda: len(list(archive.glob("*.jsonl.gz"))) >= 3, timeout=120, what="pruning to start")
        time.sleep(random.Random(seed).uniform(0.0, 0.3))
        server.process.signal(signal.SIGKILL)
        server.process.wait(10)
    after_kill = asyncio.run(snapshot(database_url))
    context = f"seed {seed}"
    gone = set(before) - set(after_kill)
    assert gone and gone < expired, context  # killed part-way through the backlog
    assert set(after_kill) == set(before) - gone, context
    # Finished jobs left are untouched (the scheduler may move the history's unfinished ones).
    assert {job: before[job] for job in after_kill if job in finished} == {
        job: entry for job, entry in after_kill.items() if job in finished
    }, context
    in_archive = archived(archive)
    assert {job: before[job][1] for job in gone} == {job: in_archive[job] for job in gone}, context
    assert_invariants_hold(database_url)

    # A restarted server finishes the job: every expired job gone and archived, nothing else.
    with running_server(
        tmp_path, database_url=database_url, env={**env, "ARMADA_RETENTION_BATCH_SIZE": "200"}
    ):
        wait_for(
            lambda: set(asyncio.run(snapshot(database_url))).isdisjoint(expired), timeout=300, what="pruning"
        )
    final = asyncio.run(snapshot(database_url))
    assert set(final) == set(before) - expired, context
    assert {job: final[job] for job in recent} == {job: before[job] for job in recent}, context
    assert {job: before[job][1] for job in expired} == archived(archive), context
    assert_invariants_hold(database_url)
