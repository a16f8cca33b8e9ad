"""``schema_compatibility``: how many contract steps the schema has taken (expand).

A replica of an older version that finds the database at a revision it does not know reads
this row to decide whether it may run on it: only a database two contract steps ahead of
its own head has removed what it uses (docs/development.md, "Schema changes").
``armada.eventstore.migrate`` writes the row after every upgrade and downgrade.

Revision ID: 0011_schema_compatibility
Revises: 0010_retention
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_schema_compatibility"
down_revision = "0010_retention"
branch_labels = None
depends_on = None
#: ``expand``: adds only; the version before this one runs on the result unchanged.
phase = "expand"


def upgrade() -> None:
    op.create_table(
        "schema_compatibility",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("contract_steps", sa.Integer, nullable=False),
        sa.Column("revision", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("schema_compatibility")
