"""Compaction of old heartbeats and node reports, on SQLite and PostgreSQL: the log shrinks,
the views (live and rebuilt) stay exactly as they were."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from armada.eventstore import audit, fleet_history, schema
from armada.eventstore.database import Database
from armada.eventstore.fleet_history import DELETED, HEARTBEAT, REPORT, FleetEvent, superseded
from armada.eventstore.rebuild import rebuild_views
from armada.eventstore.views import utc
from armada.model import events as ev
from armada.services import retention as retention_service
from armada.services.retention import Pruner
from armada.services.settings import RetentionSettings
from tests.factories import make_job, submission

START = datetime(2026, 1, 1, tzinfo=UTC)


def fleet_stream(rng: random.Random, count: int) -> list[ev.Event]:
    """Heartbeats, node reports, cordons, settings and deletions of three executors (one with
    an id that needs escaping), a minute apart, with some jobs' events among them."""
    executors = ["cluster-a", "cluster-b", 'odd"id\\x']
    stream: list[ev.Event] = []
    for i in range(count):
        when = START + timedelta(minutes=i)
        executor = rng.choice(executors)
        roll = rng.random()
        if roll < 0.55:
            stream.append(ev.ExecutorHeartbeat(executor_id=executor, created=when))
        elif roll < 0.85:
            nodes = [
                ev.ExecutorNode(name=f"node-{n}", allocatable={"cpu": rng.randint(1, 64) * 1000})
                for n in rng.sample(range(8), rng.randint(0, 4))
            ]
            stream.append(
                ev.ExecutorReported(
                    executor_id=executor, pool=rng.choice(["a", "b"]), nodes=nodes, created=when
                )
            )
        elif roll < 0.9:
            stream.append(
                ev.NodeCordonChanged(executor_id=executor, node=f"node-{rng.randrange(8)}", created=when)
            )
        elif roll < 0.93:
            stream.append(
                ev.ExecutorSettingsUpserted(executor_id=executor, cordoned=rng.random() < 0.5, created=when)
            )
        elif roll < 0.96:
            stream.append(ev.ExecutorDeleted(executor_id=executor, created=when))
        else:
            stream.extend(submission(make_job(job_id=f"{i:026d}"), when))
    return stream


async def view_rows(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    async with db.engine.connect() as conn:
        return await audit.view_rows(conn)


async def fleet_log(db: Database) -> list[tuple[int, datetime]]:
    """The heartbeats' and node reports' sequence numbers and times."""
    events = schema.events
    query = select(events.c.seq, events.c.created).where(events.c.type.in_([HEARTBEAT, REPORT]))
    async with db.engine.connect() as conn:
        return sorted((seq, utc(created)) for seq, created in await conn.execute(query))


@pytest.mark.parametrize(("seed", "chunk"), [(1, 1000), (2, 7)])
async def test_compaction_shrinks_the_log_and_keeps_the_views_live_and_rebuilt(
    database: Database, monkeypatch: pytest.MonkeyPatch, seed: int, chunk: int
) -> None:
    monkeypatch.setattr(retention_service, "FLEET_CHUNK", chunk)  # small chunks carry what they keep
    stream = fleet_stream(random.Random(seed), 600)
    for start in range(0, len(stream), 50):
        await database.store.append(stream[start : start + 50])
    before = await view_rows(database)
    log_before = await fleet_log(database)

    cutoff = START + timedelta(minutes=450)
    pruner = Pruner(database.store, RetentionSettings(expire_after="1h"))
    removed = await pruner.compact_fleet_history(cutoff)

    log_after = await fleet_log(database)
    assert removed == len(log_before) - len(log_after) > 250
    assert pruner.compacted_fleet_events == removed
    # After the cut-off nothing went; before it, at most three per executor stayed.
    assert [row for row in log_before if row[1] >= cutoff] == [row for row in log_after if row[1] >= cutoff]
    assert len([row for row in log_after if row[1] < cutoff]) <= 3 * 3
    assert await view_rows(database) == before
    await rebuild_views(database.store)
    assert await view_rows(database) == before
    assert await pruner.compact_fleet_history(cutoff) == 0  # a second round finds nothing more


def test_superseded_keeps_first_and_last_report_and_last_heartbeat_since_the_last_deletion() -> None:
    history = [
        FleetEvent(1, REPORT, "a"),
        FleetEvent(2, HEARTBEAT, "a"),
        FleetEvent(3, REPORT, "b"),
        FleetEvent(4, DELETED, "a"),
        FleetEvent(5, HEARTBEAT, "a"),  # after the deletion, before a report: kept as the last heartbeat
        FleetEvent(6, REPORT, "a"),
        FleetEvent(7, HEARTBEAT, "b"),
        FleetEvent(8, REPORT, "a"),
        FleetEvent(9, REPORT, "a"),
        FleetEvent(10, HEARTBEAT, "b"),
        FleetEvent(11, REPORT, "b"),
    ]
    assert superseded(history) == [1, 2, 7, 8]
    assert fleet_history.superseded([]) == []
