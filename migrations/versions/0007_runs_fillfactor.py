"""Runs' state changes go HOT: ``runs`` gets half of each new page free (PostgreSQL).

A run row is written once (leased) and updated twice (started, ended). With ``fillfactor``
80 a page had room for the new versions of a fifth of its rows, so two updates in three
were not HOT: each wrote new entries into both of the table's indexes and left dead ones
behind for the executors' report lookups (by ``run_id``) to step over. With half of each
page free, the first update's new version fits beside the row and the page is pruned
before the second. Pages written before this migration keep their old fill.

Revision ID: 0007_runs_fillfactor
Revises: 0006_job_states
Create Date: 2026-11-25
"""

from alembic import op

revision = "0007_runs_fillfactor"
down_revision = "0006_job_states"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE runs SET (fillfactor = 50)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE runs SET (fillfactor = 80)")
