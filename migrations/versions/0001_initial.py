"""Event log, views, and the append-only guard.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TS = sa.DateTime(timezone=True)

PG_GUARD = """
CREATE FUNCTION armada_events_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the events table is append-only (% rejected)', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION armada_events_append_only();
"""
SQLITE_GUARDS = [
    "CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
    "BEGIN SELECT RAISE(ABORT, 'the events table is append-only (UPDATE rejected)'); END",
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
    "BEGIN SELECT RAISE(ABORT, 'the events table is append-only (DELETE rejected)'); END",
]


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("seq", SEQ, primary_key=True, autoincrement=False),
        sa.Column("created", TS, nullable=False),
        sa.Column("queue", sa.String(63), nullable=False),
        sa.Column("job_set_id", sa.String(1024), nullable=False),
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_events_job_set", "events", ["queue", "job_set_id", "seq"])
    op.create_index("ix_events_job", "events", ["job_id", "seq"])
    op.create_table(
        "queues",
        sa.Column("name", sa.String(63), primary_key=True),
        sa.Column("priority_factor", sa.Double, nullable=False),
        sa.Column("cordoned", sa.Boolean, nullable=False),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("created", TS, nullable=False),
        sa.Column("updated", TS, nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("job_id", sa.String(26), primary_key=True),
        sa.Column("queue", sa.String(63), nullable=False),
        sa.Column("job_set_id", sa.String(1024), nullable=False),
        sa.Column("owner", sa.String(256), nullable=False),
        sa.Column("namespace", sa.String(256), nullable=False),
        sa.Column("client_id", sa.String(100), nullable=True),
        sa.Column("priority", sa.Double, nullable=False),
        sa.Column("priority_class", sa.String(256), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("submitted", TS, nullable=False),
        sa.Column("last_transition", TS, nullable=False),
        sa.Column("cpu_millis", sa.BigInteger, nullable=False),
        sa.Column("memory_bytes", sa.BigInteger, nullable=False),
        sa.Column("gpu", sa.BigInteger, nullable=False),
        sa.Column("gang_id", sa.String(256), nullable=True),
        sa.Column("annotations", sa.JSON, nullable=False),
        sa.Column("latest_run_id", sa.String(36), nullable=True),
        sa.Column("cluster", sa.String(256), nullable=True),
        sa.Column("node", sa.String(256), nullable=True),
        sa.Column("exit_code", sa.Integer, nullable=True),
        sa.Column("reason", sa.String, nullable=True),
        sa.Column("cancel_reason", sa.String, nullable=True),
        sa.Column("cancel_user", sa.String(256), nullable=True),
        sa.Column("cancel_ts", TS, nullable=True),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("preempt_requested", sa.Boolean, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("spec", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_jobs_queue_state", "jobs", ["queue", "state"])
    op.create_index("ix_jobs_job_set", "jobs", ["queue", "job_set_id", "state"])
    op.create_index(
        "ix_jobs_client_id",
        "jobs",
        ["queue", "client_id"],
        postgresql_where=sa.text("client_id IS NOT NULL"),
        sqlite_where=sa.text("client_id IS NOT NULL"),
    )
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("queue", sa.String(63), nullable=False),
        sa.Column("cluster", sa.String(256), nullable=False),
        sa.Column("node", sa.String(256), nullable=False),
        sa.Column("pool", sa.String(256), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("leased", TS, nullable=False),
        sa.Column("pending", TS, nullable=True),
        sa.Column("started", TS, nullable=True),
        sa.Column("finished", TS, nullable=True),
        sa.Column("exit_code", sa.Integer, nullable=True),
        sa.Column("reason", sa.String, nullable=True),
        postgresql_with={"fillfactor": 80},
    )
    op.create_index("ix_runs_job", "runs", ["job_id"])
    op.create_table(
        "executors",
        sa.Column("executor_id", sa.String(256), primary_key=True),
        sa.Column("pool", sa.String(256), nullable=False),
        sa.Column("node_count", sa.Integer, nullable=False),
        sa.Column("first_seen", TS, nullable=False),
        sa.Column("last_seen", TS, nullable=False),
    )
    op.create_table(
        "nodes",
        sa.Column("executor_id", sa.String(256), primary_key=True),
        sa.Column("name", sa.String(256), primary_key=True),
        sa.Column("pool", sa.String(256), nullable=False),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("unschedulable", sa.Boolean, nullable=False),
        sa.Column("ready", sa.Boolean, nullable=False),
        sa.Column("updated", TS, nullable=False),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_GUARD)
    else:
        for statement in SQLITE_GUARDS:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER events_append_only ON events")
        op.execute("DROP FUNCTION armada_events_append_only()")
    for table in ("nodes", "executors", "runs", "jobs", "queues", "events"):
        op.drop_table(table)
