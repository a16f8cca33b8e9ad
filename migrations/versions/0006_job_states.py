"""Job states apart: a narrow, indexed ``job_states`` table; ``jobs`` state changes go HOT.

Every index that covers a column a state change sets (``state``, ``last_transition``) moves
from ``jobs`` to ``job_states`` (job id, queue, state, last transition) — four become two:
``(queue, state, last_transition)`` and ``(state, last_transition)`` — and ``jobs`` gets
room on each page (PostgreSQL ``fillfactor`` 50, for new pages): a job's state change
then rewrites a narrow row and its index entries instead of the wide ``jobs`` row and all
of its indexes. The job-set index drops ``state`` (a job set's rows are filtered by state
after the index lookup).

Revision ID: 0006_job_states
Revises: 0005_fleet_controls
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_job_states"
down_revision = "0005_fleet_controls"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_states",
        sa.Column("job_id", sa.String(26), primary_key=True),
        sa.Column("queue", sa.String(63), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("last_transition", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        "INSERT INTO job_states (job_id, queue, state, last_transition)"
        " SELECT job_id, queue, state, last_transition FROM jobs"
    )
    op.create_index("ix_job_states_queue_state", "job_states", ["queue", "state", "last_transition"])
    op.create_index("ix_job_states_state_transition", "job_states", ["state", "last_transition"])
    moved = ("ix_jobs_queue_state", "ix_jobs_queue_transition", "ix_jobs_state_transition", "ix_jobs_job_set")
    for name in moved:
        op.drop_index(name, table_name="jobs")
    op.create_index("ix_jobs_job_set", "jobs", ["queue", "job_set_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE jobs SET (fillfactor = 50)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE jobs RESET (fillfactor)")
    op.drop_index("ix_jobs_job_set", table_name="jobs")
    op.create_index("ix_jobs_job_set", "jobs", ["queue", "job_set_id", "state"])
    op.create_index("ix_jobs_queue_state", "jobs", ["queue", "state"])
    op.create_index("ix_jobs_queue_transition", "jobs", ["queue", "last_transition"])
    op.create_index("ix_jobs_state_transition", "jobs", ["state", "last_transition"])
    op.drop_table("job_states")
