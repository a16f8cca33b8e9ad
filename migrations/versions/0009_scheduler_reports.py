"""The ``scheduler_reports`` table: the leader's latest reports, read by every replica (issue #47).

Revision ID: 0009_scheduler_reports
Revises: 0008_job_set_by_submission
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_scheduler_reports"
down_revision = "0008_job_set_by_submission"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduler_reports",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("written", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("scheduler_reports")
