"""``job_states``: the narrow, indexed copy of each job's state, on SQLite and PostgreSQL.

It must always agree with ``jobs`` (both are written from the same events), survive the
migration that introduced it with the data already stored, and keep ``jobs`` state changes
HOT updates on PostgreSQL (no index of ``jobs`` covers what a state change sets).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import inspect, select, text

from armada.eventstore import migrate, projections, schema
from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.ids import new_run_id
from tests.factories import RandomHistory, append_in_batches, make_job, submission

BEFORE_JOB_STATES = "0005_fleet_controls"


async def _append_history(database: Database, seed: int, count: int) -> None:
    stream = list(RandomHistory(seed=seed).events(count))
    await append_in_batches(database.store, stream, random.Random(seed), largest=80)


async def _states(database: Database) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """``(job_id, queue, state, last_transition)`` as ``jobs`` and as ``job_states`` hold them."""
    jobs, states = schema.jobs, schema.job_states
    async with database.engine.connect() as conn:
        from_jobs = await conn.execute(
            select(jobs.c.job_id, jobs.c.queue, jobs.c.state, jobs.c.last_transition).order_by(jobs.c.job_id)
        )
        from_states = await conn.execute(select(states).order_by(states.c.job_id))
        return [tuple(row) for row in from_jobs], [tuple(row) for row in from_states]


async def test_job_states_agree_with_jobs_after_every_kind_of_event(database: Database) -> None:
    await _append_history(database, seed=11, count=3000)
    from_jobs, from_states = await _states(database)
    assert len({row[2] for row in from_jobs}) >= 4, "the history reaches several states"
    assert from_states == from_jobs


async def test_upgrading_from_0005_copies_the_stored_states(database: Database) -> None:
    await _append_history(database, seed=12, count=1500)
    expected = await _states(database)
    await migrate.downgrade(database.engine, BEFORE_JOB_STATES)
    async with database.engine.connect() as conn:
        tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        jobs_indexes = await conn.run_sync(lambda sync: inspect(sync).get_indexes("jobs"))
    assert "job_states" not in tables
    assert {"ix_jobs_queue_state", "ix_jobs_state_transition"} <= {index["name"] for index in jobs_indexes}

    await migrate.upgrade(database.engine)
    assert await _states(database) == expected
    assert expected[0], "the upgrade had rows to copy"


@pytest.mark.postgres
async def test_a_job_state_change_is_a_hot_update_of_jobs(database: Database) -> None:
    if not database.is_postgres:
        pytest.skip("HOT updates are PostgreSQL's")
    now = datetime.now(UTC)
    jobs = [make_job() for _ in range(200)]
    await database.store.append([e for job in jobs for e in submission(job, now)])
    changes = projections.ViewChanges()
    for job in jobs:
        env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id, "run_id": new_run_id()}
        changes.add(ev.JobLeased(**env, created=now + timedelta(seconds=1), cluster_id="c", node_id="n"))
    async with database.engine.begin() as conn:
        await projections.apply(conn, changes)
        updated, hot = (
            await conn.execute(
                text("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'jobs'")
            )
        ).one()
    assert updated == len(jobs)
    assert hot == len(jobs), f"{hot} of {updated} state changes were HOT updates"
