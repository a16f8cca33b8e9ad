"""Recognise errors that mean "the database cannot be reached right now", not a bug.

A stopped, restarting or overloaded database surfaces as driver errors wrapped (or not) by
SQLAlchemy, sometimes as the context of a failed rollback. Callers turn these into a
retryable 503 instead of a 500, so clients and executors back off and try again.
"""

from __future__ import annotations

import sqlite3

import psycopg
from sqlalchemy import exc as sa_exc

_TRANSIENT: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,  # no pooled connection became free in time
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlite3.OperationalError,  # "database is locked" past the busy timeout
    ConnectionError,
)


def is_database_unavailable(error: BaseException) -> bool:
    """True if ``error`` (or an error it was raised from or while handling) is transient."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _TRANSIENT):
            return True
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return False
