"""SQLite's planner statistics (``armada.eventstore.sqlite_stats``): every index of the job
views has a row, and on a new SQLite database Lookout's pages that took a bad index without
them take the one that returns a page without sorting the match: a queue with a priority
bound walks the queue by submission, a node's jobs by last transition start from the node's
runs rather than walking whole states, a namespace by priority reads
``ix_jobs_namespace_priority`` in order.
"""

from __future__ import annotations

import pytest

from armada.eventstore import schema, sqlite_stats
from armada.eventstore.database import Database
from armada.lookout.jobs import page_query
from armada.lookout.wire import ColumnMatch, JobFilter, JobsRequest, Order


def test_every_index_of_the_job_views_has_a_row() -> None:
    tables = (schema.jobs, schema.job_states, schema.runs)
    expected = {(table.name, f"sqlite_autoindex_{table.name}_1") for table in tables} | {
        (table.name, str(index.name)) for table in tables for index in table.indexes
    }
    assert {(table, index) for table, index, _ in sqlite_stats.ROWS} == expected


def _page(order: str, *matches: ColumnMatch, queue: str = "") -> JobsRequest:
    return JobsRequest(
        filter=JobFilter(queue=queue, matches=list(matches)), order=Order(field=order, direction="desc")
    )


PLANS = {
    "queue + priority bound": (
        _page("submitted", ColumnMatch(column="priority", match="greaterThan", value="3"), queue="q"),
        "SEARCH jobs USING INDEX ix_jobs_queue_submitted (queue=?)",
    ),
    "node by last transition": (
        _page("lastTransition", ColumnMatch(column="node", match="exact", value="node-1")),
        "SEARCH runs USING COVERING INDEX ix_runs_node (node=?)",
    ),
    "namespace by priority": (
        _page("priority", ColumnMatch(column="namespace", match="exact", value="ns")),
        "SEARCH jobs USING INDEX ix_jobs_namespace_priority (namespace=?)",
    ),
}


@pytest.mark.parametrize("kind", sorted(PLANS))
async def test_lookout_pages_take_the_index_that_suits_them(database: Database, kind: str) -> None:
    if database.is_postgres:
        pytest.skip("sqlite_stat1 is SQLite's")
    request, expected = PLANS[kind]
    # A connection of another engine, opened after the statistics were written (as a
    # server's are), and the statement with its parameters bound as the server runs it (a
    # literal LIMIT changes SQLite's plan).
    other = await Database(database.url).open(migrate_schema=False, listen=False)
    try:
        async with other.engine.connect() as conn:
            compiled = page_query(request, None).compile(
                dialect=conn.dialect, compile_kwargs={"render_postcompile": True}
            )
            params = tuple(compiled.params[name] for name in compiled.positiontup or ())
            rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", params)
            plan = [row[3] for row in rows]
    finally:
        await other.close()
    assert expected in plan
    assert not any("ix_job_states_state_transition" in step for step in plan), plan
    if kind != "node by last transition":  # merged per state (sorted), each a few runs' jobs
        assert not any("TEMP B-TREE" in step for step in plan), plan
