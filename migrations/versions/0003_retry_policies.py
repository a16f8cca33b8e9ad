"""The ``retry_policies`` view: named retry policies that queues refer to (issue #18).

Revision ID: 0003_retry_policies
Revises: 0002_lookout_indexes
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_retry_policies"
down_revision = "0002_lookout_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retry_policies",
        sa.Column("name", sa.String(63), primary_key=True),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("retry_policies")
