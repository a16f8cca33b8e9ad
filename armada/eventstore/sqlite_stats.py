"""SQLite's planner statistics for the job views: written, not measured.

SQLite picks among indexes by ``sqlite_stat1``, which only ``ANALYZE`` fills. Without it
every index looks as selective as any other, so a Lookout page takes whichever index
matches most conditions: a queue with a priority bound read the queue's jobs in that range
through ``(queue, priority, job_id)`` and sorted them, a node's jobs by last transition
walked whole states. Measuring the statistics does not suit a served database: a full
``ANALYZE`` holds the only writer for 5-14 s per 1,000,000 jobs, a sampled one
(``analysis_limit``) counts each index's first entries (1,000 of them made queue, namespace,
state and priority equally selective), ``ANALYZE`` of a new database records nothing, and
``PRAGMA optimize`` analyses only what its own connection read.

What the planner needs is how the indexes compare, which the schema and the shape of a
shared cluster's jobs decide more than the row counts do. So these rows describe 1,000,000
jobs (Lookout's goal) of 20 queues, 40 namespaces, 7 priorities, 8 states and 2,000 nodes:
the figures in each are the rows, then the rows per distinct value of each leading prefix
of the index's columns (``sqlite_stat1``'s format). They are written on every upgrade
(:func:`armada.eventstore.migrate.upgrade`, at each start), replacing what an ``ANALYZE``
recorded for these indexes; other tables keep SQLite's defaults. Figures: docs/performance.md,
"Lookout".
"""

from __future__ import annotations

from sqlalchemy import Connection, text

#: ``(table, index, stat)`` rows of ``sqlite_stat1``.
ROWS = (
    ("jobs", "sqlite_autoindex_jobs_1", "1000000 1"),
    ("jobs", "ix_jobs_job_set", "1000000 50000 500 1"),
    ("jobs", "ix_jobs_queue_submitted", "1000000 50000 1"),
    ("jobs", "ix_jobs_queue_priority", "1000000 50000 7000 1"),
    ("jobs", "ix_jobs_namespace", "1000000 25000 1"),
    ("jobs", "ix_jobs_priority", "1000000 150000 1"),
    ("jobs", "ix_jobs_namespace_priority", "1000000 25000 3500 1"),
    # Partial: failed and preempted jobs only; client ids of the submissions that give one.
    ("jobs", "ix_jobs_reason", "100000 20000 1"),
    ("jobs", "ix_jobs_client_id", "100000 5000 1"),
    ("job_states", "sqlite_autoindex_job_states_1", "1000000 1"),
    ("job_states", "ix_job_states_queue_state", "1000000 50000 6000 1"),
    ("job_states", "ix_job_states_state_transition", "1000000 125000 1"),
    ("runs", "sqlite_autoindex_runs_1", "1000000 1"),
    ("runs", "ix_runs_job", "1000000 1"),
    ("runs", "ix_runs_node", "1000000 500 1"),
)


def write(connection: Connection) -> None:
    """Replace :data:`ROWS` in ``sqlite_stat1`` (creating it if need be) in the caller's
    transaction: a few rows, milliseconds. This connection reloads them; others load them
    when they open (SQLite reads statistics with the schema)."""
    connection.exec_driver_sql("ANALYZE sqlite_schema")  # creates sqlite_stat1; analyses nothing
    rows = [{"tbl": table, "idx": index, "stat": stat} for table, index, stat in ROWS]
    connection.execute(text("DELETE FROM sqlite_stat1 WHERE tbl = :tbl AND idx = :idx"), rows)
    connection.execute(text("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (:tbl, :idx, :stat)"), rows)
    connection.exec_driver_sql("ANALYZE sqlite_schema")
