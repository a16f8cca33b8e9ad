"""Usage accounting on SQLite and PostgreSQL: the rollups agree with the runs, whatever the batching."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import date
from decimal import Decimal

import pytest
from sqlalchemy import delete

from armada.eventstore import audit, migrate, schema
from armada.eventstore.database import Database
from armada.eventstore.rebuild import rebuild_views
from armada.model import events as ev
from armada.model.quantities import parse_quantity
from armada.services.invariants import check
from armada.services.usage import UsageQuery, usage_report
from armada.services.visibility import ReadScope
from tests.factories import RandomHistory, append_in_batches

LOST = (ev.JobPreempted, ev.JobLeaseReturned, ev.JobLeaseExpired)


def expected_seconds(stream: list[ev.Event]) -> dict[tuple[str, str, str], float]:
    """Per (queue, resource, "used"|"lost"|"preempted"): the sum over runs of (end - start) x request."""
    requests: dict[str, dict[str, Decimal]] = {}
    started: dict[str, ev.Event] = {}
    totals: dict[tuple[str, str, str], float] = defaultdict(float)
    for event in stream:
        if isinstance(event, ev.JobSubmitted):
            asked = event.job.scheduling_resource_requirements.requests
            requests[event.job_id] = {name: parse_quantity(value) for name, value in asked.items()}
        elif isinstance(event, ev.JobRunning):
            started[event.run_id] = event
        elif isinstance(event, ev.RUN_ENDS) and event.run_id in started:
            seconds = (event.created - started.pop(event.run_id).created).total_seconds()
            kinds = ["used"] + (["lost"] if isinstance(event, LOST) else [])
            kinds += ["preempted"] if isinstance(event, ev.JobPreempted) else []
            for resource, amount in requests[event.job_id].items():
                for kind in kinds:
                    totals[event.queue, resource, kind] += float(amount) * seconds
    return totals


async def reported(database: Database) -> dict[tuple[str, str, str], float]:
    query = UsageQuery("2025-12-01", "2026-02-01", "queue", "", date(2026, 2, 1))
    report = await usage_report(
        database.store, ReadScope(database.store, lambda _q: True, everything=True), query
    )
    figures: dict[tuple[str, str, str], float] = {}
    for row in report.rows:
        for kind, values in (("used", row.used), ("lost", row.lost), ("preempted", row.preempted)):
            for resource, seconds in values.items():
                figures[row.key["queue"], resource, kind] = seconds
    return figures


@pytest.mark.parametrize("seed", [5, 17])
async def test_usage_agrees_with_the_runs_within_one_percent_and_a_rebuild_gives_it_again(
    database: Database, seed: int
) -> None:
    history = RandomHistory(seed=seed)
    stream = list(history.events(3000))
    await append_in_batches(database.store, stream, random.Random(seed), largest=60)
    expected = expected_seconds(stream)
    assert any(kind == "preempted" for _q, _r, kind in expected)
    assert sum(seconds for (_q, _r, kind), seconds in expected.items() if kind == "lost") > 0
    figures = await reported(database)
    for key, seconds in expected.items():
        assert figures.get(key, 0.0) == pytest.approx(seconds, rel=0.01), key
    assert {key for key in figures if key[1] != "jobs"} == set(expected)

    await rebuild_views(database.store)
    assert await reported(database) == figures


async def test_upgrading_a_database_with_history_counts_its_log(database: Database) -> None:
    stream = list(RandomHistory(seed=23).events(1500))
    for position in range(0, len(stream), 100):
        await database.store.append(stream[position : position + 100])
    counted = await rollup_rows(database)
    assert counted["usage"] and counted["usage_waits"]
    await migrate.downgrade(database.engine, "0011_schema_compatibility")  # a database of 0.9.x
    await migrate.upgrade(database.engine)
    assert await rollup_rows(database) == counted


async def rollup_rows(database: Database) -> dict[str, list[tuple[object, ...]]]:
    async with database.engine.connect() as conn:
        rows = await audit.view_rows(conn)
    return {table.name: rows[table.name] for table in schema.ROLLUPS}


async def test_check_warns_of_rollups_behind_the_log_and_a_rebuild_counts_them(database: Database) -> None:
    stream = list(RandomHistory(seed=29).events(600))
    for position in range(0, len(stream), 100):
        await database.store.append(stream[position : position + 100])
    counted = await rollup_rows(database)
    async with database.engine.begin() as conn:  # as if an older replica had appended the log
        for table in schema.ROLLUPS:
            await conn.execute(delete(table))
    report = await check(database.store)
    assert report.ok and any("usage rollup" in warning for warning in report.warnings), report
    await rebuild_views(database.store)
    assert await rollup_rows(database) == counted
    assert not [warning for warning in (await check(database.store)).warnings if "usage rollup" in warning]


async def test_facts_kept_from_earlier_appends_count_as_the_views_would(database: Database) -> None:
    """The store counts leases and run ends from facts its own appends left
    (``usage_memory``); another writer's appends in between make it read the views again.
    Either way every rollup row, waits included, is the one a replay gives."""
    other = await Database(database.url).open(migrate_schema=False, listen=False)
    try:
        stream = list(RandomHistory(seed=31).events(3000))
        rng = random.Random(31)
        position = 0
        while position < len(stream):
            size = rng.randint(1, 80)
            writer = other if rng.random() < 0.15 else database  # another replica, now and then
            await writer.store.append(stream[position : position + size])
            position += size
    finally:
        await other.close()
    counted = await rollup_rows(database)
    assert counted["usage"] and counted["usage_waits"]
    await rebuild_views(database.store)
    assert await rollup_rows(database) == counted
