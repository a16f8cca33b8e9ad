"""Indexes for Lookout's jobs table: a page of a queue or a state in any sort order.

Each index returns one sort order of a queue's jobs (by submission = job id, by last
transition, by priority) or of a state's jobs (by last transition; rare states are
fetched whole and sorted), so a page of 100 never sorts a million rows.

Revision ID: 0002_lookout_indexes
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op

revision = "0002_lookout_indexes"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_queue_submitted", "jobs", ["queue", "job_id"])
    op.create_index("ix_jobs_queue_transition", "jobs", ["queue", "last_transition"])
    op.create_index("ix_jobs_queue_priority", "jobs", ["queue", "priority", "job_id"])
    op.create_index("ix_jobs_state_transition", "jobs", ["state", "last_transition"])


def downgrade() -> None:
    for name in (
        "ix_jobs_state_transition",
        "ix_jobs_queue_priority",
        "ix_jobs_queue_transition",
        "ix_jobs_queue_submitted",
    ):
        op.drop_index(name, table_name="jobs")
