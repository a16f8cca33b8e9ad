"""Executor settings and node cordons: the operators' fleet controls (issue #20).

Revision ID: 0005_fleet_controls
Revises: 0004_log_requests
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_fleet_controls"
down_revision = "0004_log_requests"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "executor_settings",
        sa.Column("executor_id", sa.String(256), primary_key=True),
        sa.Column("cordoned", sa.Boolean, nullable=False),
        sa.Column("cordon_reason", sa.String, nullable=False),
        sa.Column("set_by", sa.String, nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "node_cordons",
        sa.Column("executor_id", sa.String(256), primary_key=True),
        sa.Column("name", sa.String(256), primary_key=True),
        sa.Column("reason", sa.String, nullable=False),
        sa.Column("set_by", sa.String, nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("node_cordons")
    op.drop_table("executor_settings")
