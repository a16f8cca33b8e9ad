"""Indexes for Lookout's jobs table: pages sorted by submission or last transition.

``(queue, job_id)`` returns a queue's newest (or oldest) jobs without sorting the queue;
``(state, last_transition)`` serves state filters across queues and "recently changed" pages.

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
    op.create_index("ix_jobs_state_transition", "jobs", ["state", "last_transition"])


def downgrade() -> None:
    op.drop_index("ix_jobs_state_transition", table_name="jobs")
    op.drop_index("ix_jobs_queue_submitted", table_name="jobs")
