"""Looking rows up by many keys at once, within the databases' parameter limits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, Row, Select
from sqlalchemy.ext.asyncio import AsyncConnection

#: Keys per ``IN (...)``: well under SQLite's and PostgreSQL's bound-parameter limits.
CHUNK = 1000


async def rows_with_keys(
    conn: AsyncConnection, query: Select[Any], column: Column[Any], keys: Sequence[str]
) -> list[Row[Any]]:
    """Rows of ``query`` whose ``column`` is one of ``keys`` (duplicates asked for once)."""
    unique = list(dict.fromkeys(keys))
    found: list[Row[Any]] = []
    for start in range(0, len(unique), CHUNK):
        found += (await conn.execute(query.where(column.in_(unique[start : start + CHUNK])))).all()
    return found
