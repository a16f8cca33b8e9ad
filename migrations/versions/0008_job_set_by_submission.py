"""A job set's jobs in submission order: ``ix_jobs_job_set`` gains the job id.

Lookout's page of a job set is sorted by submission (the job id). With the index on
``(queue, job_set_id)`` alone, SQLite walked the queue's jobs in id order instead and
read each row to test its job set (tens of thousands of rows in a large queue for a page
of 100), and PostgreSQL sorted the set's rows. With the job id in the index, the set's
jobs come in page order from one range. Every other reader of the index (a job set's
jobs, cancellation by job set) asks for a prefix of it, as before.

Revision ID: 0008_job_set_by_submission
Revises: 0007_runs_fillfactor
Create Date: 2026-11-27
"""

from alembic import op

revision = "0008_job_set_by_submission"
down_revision = "0007_runs_fillfactor"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_jobs_job_set", table_name="jobs")
    op.create_index("ix_jobs_job_set", "jobs", ["queue", "job_set_id", "job_id"])


def downgrade() -> None:
    op.drop_index("ix_jobs_job_set", table_name="jobs")
    op.create_index("ix_jobs_job_set", "jobs", ["queue", "job_set_id"])
