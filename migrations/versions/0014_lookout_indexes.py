"""Indexes for Lookout's column filters across queues: namespace, failure reason, priority, node.

Each is ``(column, job_id)``, so a filter on one value returns its jobs in submission order
(or, for priority, every queue's jobs by priority) without reading the rest of ``jobs``.
Namespace and priority are set at submission, so they cost each submission one entry; the
failure reason is set by a failure or preemption (partial: other jobs have no entry). The
node's index is on ``runs`` (a node filter also asks for a run there), whose node is set
when the run is inserted: on ``jobs`` it would make every lease's update write an entry
into each of the table's indexes. Figures: docs/performance.md, "Lookout".

Migrations run in one transaction, so these are plain ``CREATE INDEX``: on PostgreSQL they
hold writes to ``jobs`` and ``runs`` back until the upgrade commits (the build time per million jobs is
in docs/performance.md). The upgrade takes the log's append lock first, as an append does
before it writes a view: taken later (counting the log into new usage rollups takes it),
a running replica's append holding it and waiting for ``jobs`` or ``runs`` deadlocks with the upgrade,
and fails. The version before this one runs on the result unchanged.

Revision ID: 0014_lookout_indexes
Revises: 0013_lookout_views
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

from armada.eventstore.dialects import APPEND_LOCK_KEY

revision = "0014_lookout_indexes"
down_revision = "0013_lookout_views"
branch_labels = None
depends_on = None
#: ``expand``: adds only; the version before this one runs on the result unchanged.
phase = "expand"

_REASON = sa.text("reason IS NOT NULL")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.text("SELECT pg_advisory_xact_lock(:key)").bindparams(key=APPEND_LOCK_KEY))
    op.create_index("ix_jobs_namespace", "jobs", ["namespace", "job_id"])
    op.create_index("ix_jobs_priority", "jobs", ["priority", "job_id"])
    op.create_index(
        "ix_jobs_reason", "jobs", ["reason", "job_id"], postgresql_where=_REASON, sqlite_where=_REASON
    )
    op.create_index("ix_runs_node", "runs", ["node", "job_id"])


def downgrade() -> None:
    op.drop_index("ix_runs_node", table_name="runs")
    for column in ("reason", "priority", "namespace"):
        op.drop_index(f"ix_jobs_{column}", table_name="jobs")
