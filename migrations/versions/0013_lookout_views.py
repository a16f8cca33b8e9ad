"""``lookout_views``: Lookout's saved views, a view of ``lookoutView*`` events (expand).

The table starts empty, as the log holds no such event yet; the version before this one
neither reads nor writes it.

Revision ID: 0013_lookout_views
Revises: 0012_usage
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_lookout_views"
down_revision = "0012_usage"
branch_labels = None
depends_on = None
#: ``expand``: adds only; the version before this one runs on the result unchanged.
phase = "expand"


def upgrade() -> None:
    op.create_table(
        "lookout_views",
        sa.Column("user_name", sa.String(256), primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lookout_views")
