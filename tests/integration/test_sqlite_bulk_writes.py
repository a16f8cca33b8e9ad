"""SQLite's bulk writes bypass SQLAlchemy's statement execution: they must store exactly what
SQLAlchemy's own INSERT and UPDATE store, value for value and type for type."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import insert, update

from armada.eventstore import dialects, schema
from armada.eventstore.appending import log_row
from armada.eventstore.database import Database
from armada.model.events import encode_event
from tests.databases import sqlite_url
from tests.factories import make_job, submission


def stored(path: Path, table: str, key: str, value: object) -> tuple[object, ...]:
    """A row as SQLite holds it: each column's value and storage type."""
    with sqlite3.connect(path) as raw:
        columns = [row[1] for row in raw.execute(f"PRAGMA table_info({table})")]
        select_list = ", ".join(f"{c}, typeof({c})" for c in columns if c != key)
        row = raw.execute(f"SELECT {select_list} FROM {table} WHERE {key} = ?", (value,)).fetchone()
        assert row is not None
        return tuple(row)


async def test_bulk_inserts_and_updates_store_what_sqlalchemy_stores(tmp_path: Path) -> None:
    database = await Database(sqlite_url(tmp_path)).open()
    events = schema.events
    event = submission(make_job(), when=datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC))[0]
    rows = [log_row(seq, event, encode_event(event)) for seq in (1, 2)]
    try:
        async with database.engine.begin() as conn:
            await conn.execute(insert(events), [rows[0]])
            await dialects.insert_rows(conn, events, [rows[1]])
        assert stored(tmp_path / "armada.db", "events", "seq", 1) == stored(
            tmp_path / "armada.db", "events", "seq", 2
        )

        states = schema.job_states
        change = {"state": "running", "last_transition": datetime(2027, 5, 6, 7, 8, 9, 10, tzinfo=UTC)}
        async with database.engine.begin() as conn:
            await dialects.insert_rows(
                conn, states, [{"job_id": job_id, "queue": "q", **change} for job_id in ("a", "b")]
            )
            later = {"state": "succeeded", "last_transition": datetime(2028, 1, 1, tzinfo=UTC)}
            await conn.execute(update(states).where(states.c.job_id == "a").values(later))
            await dialects.update_rows(conn, states, "job_id", tuple(later), [{**later, "_pk": "b"}])
        assert stored(tmp_path / "armada.db", "job_states", "job_id", "a") == stored(
            tmp_path / "armada.db", "job_states", "job_id", "b"
        )
    finally:
        await database.close()


async def test_bulk_writes_store_any_time_as_sqlalchemy_does(tmp_path: Path) -> None:
    """The bulk writes format SQLite's times themselves: aware in any zone, naive, without
    microseconds, before year 1000, the largest, and none."""
    database = await Database(sqlite_url(tmp_path)).open()
    runs = schema.runs
    times = [
        datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(2026, 12, 31, 23, 59, 59, 999999),
        datetime(999, 1, 1, tzinfo=UTC),
        datetime.max,
        None,
    ]
    leased = datetime(2026, 1, 1, tzinfo=UTC)

    def run(run_id: str, when: datetime | None) -> dict[str, object]:
        return {
            "run_id": run_id,
            "job_id": "j",
            "queue": "q",
            "cluster": "c",
            "node": "n",
            "pool": "p",
            "state": "running",
            "leased": when or leased,
            "pending": when,
            "started": None,
            "finished": None,
            "exit_code": None,
            "reason": None,
        }

    try:
        for index, when in enumerate(times):
            by_sqlalchemy, by_bulk = f"a{index}", f"b{index}"
            async with database.engine.begin() as conn:
                await conn.execute(insert(runs), [run(by_sqlalchemy, when)])
                await dialects.insert_rows(conn, runs, [run(by_bulk, when)])
                await conn.execute(update(runs).where(runs.c.run_id == by_sqlalchemy).values(started=when))
                await dialects.update_rows(
                    conn, runs, "run_id", ("started",), [{"started": when, "_pk": by_bulk}]
                )
            path = tmp_path / "armada.db"
            assert stored(path, "runs", "run_id", by_sqlalchemy) == stored(path, "runs", "run_id", by_bulk), (
                when
            )
    finally:
        await database.close()
