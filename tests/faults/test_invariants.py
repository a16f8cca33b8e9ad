"""``armada admin check``: a plausible history passes; each broken rule is reported."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import update

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.metadata import as_label_value
from armada.model.queues import Queue
from armada.services.invariants import check
from tests.databases import sqlite_url
from tests.factories import RandomHistory, make_job, submission
from tests.faults.workload import admin_check
from tests.planting import plant_garbage_event, plant_infinite_queue, plant_nan_priority_job


async def test_a_random_plausible_history_passes(database: Database) -> None:
    await database.store.append(list(RandomHistory(seed=9).events(1500)))
    report = await check(database.store)
    assert report.violations == []
    assert report.events >= 1500 and report.jobs > 0 and report.runs > 0


async def test_two_active_runs_and_a_second_terminal_state_are_reported(database: Database) -> None:
    job = make_job()
    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}
    await database.store.append(
        [
            *submission(job),
            ev.JobLeased(**env, run_id="r1", cluster_id="c", node_id="n"),
            ev.JobLeased(**env, run_id="r2", cluster_id="c", node_id="n"),
            ev.JobSucceeded(**env, run_id="r2"),
            ev.JobFailed(**env, run_id="r9"),
        ]
    )
    violations = "\n".join((await check(database.store)).violations)
    assert "leased run r2 while run r1 is active" in violations
    assert "run r9, which job" in violations
    assert "moved from terminal SUCCEEDED to FAILED" in violations
    assert "is FAILED but run r1 is active" in violations
    assert "is FAILED but has an active run" in violations


async def test_views_that_differ_from_a_replay_are_reported_and_left_alone(database: Database) -> None:
    job = make_job()
    await database.store.append(submission(job))
    async with database.engine.begin() as conn:
        await conn.execute(update(schema.jobs).values(state="RUNNING"))
    report = await check(database.store)
    assert report.violations == ["view jobs: 1 rows differ from a replay, e.g. " + repr(job.id)]
    # The check rolled its replay back: the tampered row is still there.
    assert (await check(database.store)).violations == report.violations


async def test_admin_check_command_says_ok_or_lists_violations_and_exits_1(tmp_path: Path) -> None:
    database = await Database(sqlite_url(tmp_path)).open()  # the command is the same on both
    job = make_job()
    await database.store.append(submission(job))
    healthy = admin_check(database.url)
    assert healthy.returncode == 0, healthy.stderr
    assert healthy.stdout == "ok (2 events, 1 jobs, 0 runs checked)\n"

    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}
    await database.store.append([ev.JobSucceeded(**env, run_id="ghost")])
    broken = admin_check(database.url)
    assert broken.returncode == 1
    assert "succeeded names run ghost" in broken.stdout
    assert broken.stdout.splitlines()[-1].startswith("FAILED: 1 violations listed")
    await database.close()


async def test_admin_check_lists_unreadable_records(tmp_path: Path) -> None:
    database = await Database(sqlite_url(tmp_path)).open()
    bad = await plant_nan_priority_job(database.store, "q", "poisoned")
    seq = await plant_garbage_event(database.store, "q", "poisoned", bad.id)
    await plant_infinite_queue(database.store, "broken")
    await database.close()
    result = admin_check(database.url)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"seq 1: unreadable submitted event of job {bad.id}" in result.stdout
    assert f"seq {seq}: unreadable running event of job {bad.id}" in result.stdout
    assert f"view: job {bad.id} has an unreadable spec" in result.stdout
    assert "view: queue broken has an unreadable spec" in result.stdout


async def test_admin_check_warns_of_a_stored_queue_whose_name_is_no_label_value(tmp_path: Path) -> None:
    database = await Database(sqlite_url(tmp_path)).open()
    # Created before queue names had to end with a letter or digit.
    await database.store.append([ev.QueueCreated(queue="team-", spec=Queue(name="team-"))])
    await database.close()
    result = admin_check(database.url)
    assert result.returncode == 0, result.stdout + result.stderr
    label = as_label_value("team-")
    assert "warning: queue 'team-': its name is not a Kubernetes label value" in result.stdout
    assert f"its pods are labelled {label!r} instead" in result.stdout
