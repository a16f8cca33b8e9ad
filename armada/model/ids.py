"""Identifiers: job ids are lower-case ULIDs, run ids UUIDs; both sortable by creation time.

Time-ordered keys keep the database's indexes appending at the end instead of splitting
pages at random.
"""

from __future__ import annotations

from ulid import ULID


def new_job_id() -> str:
    return str(ULID()).lower()


def new_run_id() -> str:
    return str(ULID().to_uuid())
