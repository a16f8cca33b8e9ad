"""A consistent copy of a SQLite database taken while servers keep writing to it.

SQLite's online backup API copies every page in one step inside one read transaction: in
WAL mode readers never block the writer, so the server carries on and the copy is the
database as of one commit (a file copy taken meanwhile can tear between the database and
its write-ahead log). PostgreSQL has its own tools (``pg_dump``, a base backup with WAL
archiving: docs/operations.md).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from armada.eventstore.dialects import normalise_url
from armada.model.errors import InvalidRequest


def backup_sqlite(url: str, target: Path) -> int:
    """Copy the SQLite database ``url`` names to ``target`` (a new file, readable by this
    user alone, as the database is); return its size in bytes."""
    parsed = normalise_url(url)
    if not parsed.drivername.startswith("sqlite") or not parsed.database or parsed.database == ":memory:":
        raise InvalidRequest(
            "armada admin backup copies a SQLite database file; back PostgreSQL up with pg_dump "
            "or a base backup (docs/operations.md)",
            field="database.url",
        )
    if target.exists():
        raise InvalidRequest(f"{target} exists: the backup goes to a new file", field="file")
    if not Path(parsed.database).is_file():
        raise InvalidRequest(f"no SQLite database at {parsed.database}", field="database.url")
    partial = target.with_name(target.name + ".partial")
    source = sqlite3.connect(parsed.database, timeout=30.0)
    try:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)  # all pages in one step: one snapshot
            copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            copy.close()
    finally:
        source.close()
    partial.rename(target)  # only a whole copy ever has the name asked for
    return target.stat().st_size
