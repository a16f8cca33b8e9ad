"""An index for Lookout's namespace filter sorted by priority: ``jobs (namespace, priority, job_id)``.

Without it a namespace's page by priority either reads all of the namespace's jobs and sorts
them (a common namespace: half a million jobs) or walks every job by priority until a page
of the namespace's is found (a rare one). Which is cheaper depends on the value, which
SQLite's statistics cannot tell (``sqlite_stat1`` holds averages per index); with this index
neither is needed. It costs each submission one more index entry (namespace and priority are
set at submission only, so state changes stay HOT updates on PostgreSQL). Figures:
docs/performance.md, "Lookout".

As in ``0014_lookout_indexes``: a plain ``CREATE INDEX`` in the upgrade's transaction, after
the log's append lock on PostgreSQL (a replica's append waiting for ``jobs`` would otherwise
deadlock with it). The version before this one runs on the result unchanged.

Revision ID: 0015_lookout_namespace_priority
Revises: 0014_lookout_indexes
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

from armada.eventstore.dialects import APPEND_LOCK_KEY

revision = "0015_lookout_namespace_priority"
down_revision = "0014_lookout_indexes"
branch_labels = None
depends_on = None
#: ``expand``: adds only; the version before this one runs on the result unchanged.
phase = "expand"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.text("SELECT pg_advisory_xact_lock(:key)").bindparams(key=APPEND_LOCK_KEY))
    op.create_index("ix_jobs_namespace_priority", "jobs", ["namespace", "priority", "job_id"])


def downgrade() -> None:
    op.drop_index("ix_jobs_namespace_priority", table_name="jobs")
