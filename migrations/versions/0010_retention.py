"""Retention may delete from ``events``: the append-only guard honours ``log_pruning``.

Updates and TRUNCATE stay refused, and so does a DELETE unless the deleting transaction
holds a row of ``log_pruning`` (retention inserts and removes it around its deletes of
expired jobs: :mod:`armada.eventstore.retention`).

Revision ID: 0010_retention
Revises: 0009_scheduler_reports
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_retention"
down_revision = "0009_scheduler_reports"
branch_labels = None
depends_on = None
#: Only lets the events table accept more (a DELETE by retention): older replicas run on it.
phase = "expand"

PG_GUARD = """
CREATE OR REPLACE FUNCTION armada_events_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM log_pruning) THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'the events table is append-only (% rejected)', TG_OP;
END;
$$ LANGUAGE plpgsql;
"""
PG_OLD_GUARD = """
CREATE OR REPLACE FUNCTION armada_events_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the events table is append-only (% rejected)', TG_OP;
END;
$$ LANGUAGE plpgsql;
"""
SQLITE_GUARD = (
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
    "WHEN NOT EXISTS (SELECT 1 FROM log_pruning) "
    "BEGIN SELECT RAISE(ABORT, 'the events table is append-only (DELETE rejected)'); END"
)
SQLITE_OLD_GUARD = (
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
    "BEGIN SELECT RAISE(ABORT, 'the events table is append-only (DELETE rejected)'); END"
)


def upgrade() -> None:
    op.create_table("log_pruning", sa.Column("pruning", sa.Boolean, primary_key=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_GUARD)
    else:
        op.execute("DROP TRIGGER events_no_delete")
        op.execute(SQLITE_GUARD)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_OLD_GUARD)
    else:
        op.execute("DROP TRIGGER events_no_delete")
        op.execute(SQLITE_OLD_GUARD)
    op.drop_table("log_pruning")
