"""Indexes for Lookout's column filters across queues: namespace, node, failure reason, priority.

Each is ``(column, job_id)``, so a filter on one value returns its jobs in submission order
(or, for priority, every queue's jobs by priority) without reading the rest of ``jobs``.
``node`` and ``reason`` are partial (set only once a job ran or ended), so a queued job
adds no entry; namespace and priority are set at submission and never change, so they cost
each submission one entry. Figures (what they cost, and what they serve):
docs/performance.md, "Lookout". Migrations run in one transaction, so these are plain
``CREATE INDEX``: on PostgreSQL each holds writes to ``jobs`` back while it reads the table
(the build time per million jobs is in docs/performance.md). The version before this one
runs on the result unchanged.

Revision ID: 0014_lookout_indexes
Revises: 0013_lookout_views
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_lookout_indexes"
down_revision = "0013_lookout_views"
branch_labels = None
depends_on = None
#: ``expand``: adds only; the version before this one runs on the result unchanged.
phase = "expand"

_PARTIAL = {"node": "node IS NOT NULL", "reason": "reason IS NOT NULL"}


def upgrade() -> None:
    for column in ("namespace", "priority", "node", "reason"):
        where = sa.text(_PARTIAL[column]) if column in _PARTIAL else None
        op.create_index(
            f"ix_jobs_{column}", "jobs", [column, "job_id"], postgresql_where=where, sqlite_where=where
        )


def downgrade() -> None:
    for column in ("reason", "node", "priority", "namespace"):
        op.drop_index(f"ix_jobs_{column}", table_name="jobs")
