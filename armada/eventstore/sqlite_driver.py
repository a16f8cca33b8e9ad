"""SQLite connections that can run their statements on the event loop's own thread.

aiosqlite runs every call on a connection (cursor, execute, fetch, close) on that
connection's thread and hands the answer back to the event loop. Each call costs two thread
switches, and when the machine's cores are busy each one waits to be scheduled. A small
statement costs SQLite microseconds: a one-job submission's append made ~20 such calls and
spent most of its time switching. So a connection can be told to run its calls
:attr:`~SqliteConnection.on_loop` instead. The append group does this for what it knows is
small; reads of job views and big writes stay on the connection's thread, where they do not
stall the loop (docs/performance-notes.md, "The event store").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import aiosqlite
from sqlalchemy.engine import URL, Dialect

T = TypeVar("T")

#: Seconds a connection waits for SQLite's write lock held by another process.
BUSY_TIMEOUT_S = 30.0


class SqliteConnection(aiosqlite.Connection):
    """aiosqlite's connection, with a switch to run calls on the calling (loop's) thread.

    Safe to switch between calls only: SQLAlchemy awaits each call on a connection before
    the next, so the connection's thread is idle whenever a call starts.
    """

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._thread.daemon = True  # as SQLAlchemy makes aiosqlite's: never holds up exit
        #: Run calls on the calling thread rather than the connection's own.
        self.on_loop = False

    async def _execute(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if not self.on_loop:
            result: T = await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]
            return result
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)


def connection_factory(url: URL) -> Callable[[], Awaitable[SqliteConnection]]:
    """An ``async_creator`` for SQLAlchemy: the URL's database (as SQLAlchemy reads the URL:
    path, ``uri=true`` options), with connections usable from either thread."""
    dialect: Dialect = url.get_dialect()()
    args, options = dialect.create_connect_args(url)
    options = {**options, "timeout": BUSY_TIMEOUT_S, "check_same_thread": False}

    async def connect() -> SqliteConnection:
        connection = SqliteConnection(partial(_connect_private, *args, **options))
        await connection  # starts its thread and opens the database there
        return connection

    return connect


def _connect_private(database: str, **options: Any) -> sqlite3.Connection:
    """``sqlite3.connect``, making a new database file readable by this user alone (SQLite
    gives its ``-wal`` and ``-shm`` files the same mode): it holds every job's spec and env."""
    if database and database != ":memory:" and not options.get("uri"):
        with contextlib.suppress(OSError):  # there already, or SQLite says why it cannot be
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    connection: sqlite3.Connection = sqlite3.connect(database, **options)
    return connection


def run_on_loop(driver_connection: object, on_loop: bool) -> None:
    """Switch a connection made by :func:`connection_factory` (no-op for any other)."""
    if isinstance(driver_connection, SqliteConnection):
        driver_connection.on_loop = on_loop
