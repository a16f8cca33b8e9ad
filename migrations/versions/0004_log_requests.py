"""The ``log_requests`` mailbox: log reads waiting for an executor's answer (issue #19).

Revision ID: 0004_log_requests
Revises: 0003_retry_policies
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_log_requests"
down_revision = "0003_retry_policies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_requests",
        sa.Column("request_id", sa.String(32), primary_key=True),
        sa.Column("executor_id", sa.String(256), nullable=False),
        sa.Column("order", sa.LargeBinary, nullable=False),
        sa.Column("asked", sa.Double, nullable=False),
        sa.Column("taken", sa.Double, nullable=True),
        sa.Column("answer", sa.LargeBinary, nullable=True),
    )
    op.create_index("ix_log_requests_executor", "log_requests", ["executor_id", "taken"])


def downgrade() -> None:
    op.drop_index("ix_log_requests_executor", table_name="log_requests")
    op.drop_table("log_requests")
