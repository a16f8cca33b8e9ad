"""``usage`` and ``usage_waits``: usage accounting's daily rollups (expand).

Figures per day x queue x owner x pool x priority class, in two parts: ``log`` (jobs the
log holds; rebuilt by replay) and ``pruned`` (jobs retention removed). The tables start
empty: ``armada admin rebuild-views`` fills the ``log`` part from the log after upgrading,
and runs ending from then on are counted as they end.

Revision ID: 0012_usage
Revises: 0011_schema_compatibility
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_usage"
down_revision = "0011_schema_compatibility"
branch_labels = None
depends_on = None
#: ``expand``: adds only; the version before this one runs on the result unchanged.
phase = "expand"

_AMOUNT = sa.Numeric(38, 0).with_variant(sa.BigInteger(), "sqlite")


def _cell() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("part", sa.String(8), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("queue", sa.String(63), primary_key=True),
        sa.Column("owner", sa.String(256), primary_key=True),
        sa.Column("pool", sa.String(256), primary_key=True),
        sa.Column("priority_class", sa.String(256), primary_key=True),
    ]


def upgrade() -> None:
    op.create_table(
        "usage",
        *_cell(),
        sa.Column("outcome", sa.String(16), primary_key=True),
        sa.Column("resource", sa.String(256), primary_key=True),
        sa.Column("amount", _AMOUNT, nullable=False),
    )
    op.create_table(
        "usage_waits",
        *_cell(),
        sa.Column("bucket", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("leases", sa.BigInteger, nullable=False),
        sa.Column("waited", _AMOUNT, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("usage_waits")
    op.drop_table("usage")
