"""Everything that differs between SQLite and PostgreSQL, in one place.

SQLite (the embedded default) runs in WAL mode with ``BEGIN IMMEDIATE`` for write
transactions, so a writer never deadlocks upgrading a read lock. PostgreSQL serialises
appends with a transaction-scoped advisory lock (so sequence order equals commit order)
and wakes other replicas with ``NOTIFY``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, NamedTuple

import msgspec
from psycopg import conninfo
from sqlalchemy import (
    JSON,
    Column,
    ColumnElement,
    Float,
    LargeBinary,
    String,
    Table,
    Text,
    any_,
    bindparam,
    event,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.sqlite import DATETIME as SQLITE_DATETIME
from sqlalchemy.engine import URL, Dialect, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import Select

from armada.eventstore import sqlite_driver
from armada.eventstore.schema import events as events_table

NOTIFY_CHANNEL = "armada_events"
#: Channel of named wake-ups between replicas (``notify.Signals``); the payload is the topic.
SIGNAL_CHANNEL = "armada_signals"
#: Key of the advisory lock that serialises appends to the log (arbitrary, fixed).
APPEND_LOCK_KEY = 0x41524D41  # "ARMA"
#: Execution option that makes a SQLite transaction take the write lock at BEGIN.
WRITE_OPTION = "armada_write"
#: Most values in one SQLite ``IN (...)`` (its bound-parameter limit is 32,766).
SQLITE_IN_CHUNK = 2000


def normalise_url(url: str) -> URL:
    """Pick the async driver when a URL names only the database kind."""
    parsed = make_url(url)
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    elif parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def is_postgres(engine_or_conn: AsyncEngine | AsyncConnection) -> bool:
    return engine_or_conn.dialect.name == "postgresql"


def _json_serializer(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    parsed = normalise_url(url)
    options: dict[str, Any] = {"json_serializer": _json_serializer, "json_deserializer": msgspec.json.decode}
    if parsed.drivername.startswith("sqlite"):
        connect = sqlite_driver.connection_factory(parsed)
        engine = create_async_engine(parsed, async_creator=connect, **options)
        _configure_sqlite(engine)
    else:
        engine = create_async_engine(
            parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True, **options
        )
    return engine


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        # A new (empty) database gets incremental auto-vacuum: retention then hands the pages
        # it frees back to the file system (:func:`.retention.release_space`). Only then: on a
        # database with tables the pragma cannot take effect, yet it waits for the write lock,
        # so a connection opened while another holds a write transaction would stall.
        cursor.execute("PRAGMA page_count")
        if cursor.fetchone()[0] == 0:
            cursor.execute("PRAGMA auto_vacuum=INCREMENTAL")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA wal_autocheckpoint=0")  # the store checkpoints: see .checkpoints
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA cache_size=-65536")
        cursor.execute("PRAGMA temp_store=MEMORY")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    @event.listens_for(engine.sync_engine, "checkin")
    def on_checkin(dbapi_connection: Any, _record: Any) -> None:
        # Whoever checks a connection out next gets its calls on the connection's thread.
        if dbapi_connection is not None:  # None: the connection was invalidated
            sqlite_driver.run_on_loop(dbapi_connection.driver_connection, False)


async def checkpoint(conn: AsyncConnection) -> None:
    """SQLite: copy what its write-ahead log holds into the database, waiting for nobody."""
    if not is_postgres(conn):
        await conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")


#: Takes the append lock and, for the rest of the transaction, steers the planner away from
#: hash and merge joins: an append updates view rows by key (``update_rows``), and a hash
#: join reads the whole view to find them (30 ms instead of 9 ms for 1,000 of 100,000 runs,
#: and growing with the view).
_LOCK_FOR_APPEND = (
    "SELECT pg_advisory_xact_lock(%s), set_config('enable_hashjoin', 'off', true),"
    " set_config('enable_mergejoin', 'off', true)"
)


#: Built once: SQLAlchemy takes longer to build ``coalesce(max(seq), 0)`` than SQLite to run it.
_LOG_HEAD = select(func.coalesce(func.max(events_table.c.seq), 0))


async def log_head(conn: AsyncConnection) -> int:
    """Sequence number of the newest committed event (0 for an empty log)."""
    return int(await conn.scalar(_LOG_HEAD) or 0)


async def lock_log(conn: AsyncConnection) -> int:
    """Serialise appends across processes and return the log's head, read under the lock.

    SQLite's ``BEGIN IMMEDIATE`` already serialises; PostgreSQL takes a transaction-scoped
    advisory lock, sent with the head query so that both cost one round trip.
    """
    if not is_postgres(conn):
        return await log_head(conn)
    driver = await driver_connection(conn)
    async with driver.cursor() as lock, driver.cursor() as head:
        async with driver.pipeline():
            await lock.execute(_LOCK_FOR_APPEND, [APPEND_LOCK_KEY])
            await head.execute(f"SELECT coalesce(max(seq), 0) FROM {events_table.name}")
        row = await head.fetchone()
    return int(row[0])


async def notify(conn: AsyncConnection, seq: int) -> None:
    """Tell other replicas the log grew; PostgreSQL delivers it at commit (pipelinable)."""
    await _pg_notify(conn, NOTIFY_CHANNEL, str(seq))


async def signal(conn: AsyncConnection, topic: str) -> None:
    """Tell other replicas about ``topic`` when this transaction commits (PostgreSQL only)."""
    await _pg_notify(conn, SIGNAL_CHANNEL, topic)


async def _pg_notify(conn: AsyncConnection, channel: str, payload: str) -> None:
    if is_postgres(conn):
        driver = await driver_connection(conn)
        async with driver.cursor() as cursor:
            await cursor.execute("SELECT pg_notify(%s, %s)", [channel, payload])


@asynccontextmanager
async def pipeline(conn: AsyncConnection) -> AsyncIterator[None]:
    """PostgreSQL statements issued inside (driver-level ones) are answered in one round trip.

    Statements whose results are read inside the block cost their own round trip as usual;
    errors are raised on leaving it.
    """
    if not is_postgres(conn):
        yield
        return
    driver = await driver_connection(conn)
    async with driver.pipeline():
        yield


def in_values(conn: AsyncConnection, column: Column[str], values: Sequence[str]) -> list[ColumnElement[bool]]:
    """``column IN values`` as the filters to run one query each with.

    PostgreSQL takes one array parameter (``= ANY(...)``): thousands of ids cost one bound
    value rather than a placeholder each, which SQLAlchemy and psycopg would both rewrite.
    The array is ``text[]``, the type the id columns' indexes compare in: a ``varchar[]``
    made the run reports' lookup of 1,300 runs and their jobs 40% slower (19.8 ms against
    14.2). SQLite gets chunks of ``IN`` lists below its parameter limit.
    """
    if not values:
        return []
    if is_postgres(conn):
        return [column == any_(bindparam(None, list(values), type_=ARRAY(Text)))]
    return [
        column.in_(values[start : start + SQLITE_IN_CHUNK])
        for start in range(0, len(values), SQLITE_IN_CHUNK)
    ]


def libpq_conninfo(url: str) -> str:
    """A PostgreSQL URL as plain libpq understands it (for the LISTEN connection).

    Several hosts (SQLAlchemy's ``?host=a:5432&host=b:5432``, for a primary and its standbys)
    become libpq's ``host=a,b port=5432,5432``, which tries them in turn; with
    ``target_session_attrs=read-write`` it settles on the primary."""
    parsed = normalise_url(url)
    hosts = parsed.query.get("host")
    if not isinstance(hosts, tuple):
        return parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    names, ports = zip(
        *(host.rpartition(":")[::2] if ":" in host else (host, "") for host in hosts), strict=True
    )
    options = {key: value for key, value in parsed.query.items() if key != "host" and isinstance(value, str)}
    return conninfo.make_conninfo(
        host=",".join(names),
        port=",".join(ports),
        dbname=parsed.database,
        user=parsed.username,
        password=parsed.password,
        **options,
    )


# --- bulk writes: the append hot path ----------------------------------------------------
#
# PostgreSQL gets COPY for inserts and one ``UPDATE ... FROM unnest(arrays)`` per group of
# updates (a handful of round trips per append instead of one per row); SQLite, which runs
# in-process, is fastest with plain executemany.


#: Up to this many rows, :func:`insert_rows` sends PostgreSQL one prepared INSERT per row
#: rather than a COPY: a COPY costs two round trips of its own and cannot join a pipeline,
#: and a small write (one submitted job, one run report) is mostly round trips. Per row an
#: INSERT costs PostgreSQL ~3x a COPY's; measured on this machine, the two break even at
#: ~4-5 rows (docs/performance-notes.md, "The event store").
SMALL_INSERT_ROWS = 4


class _SqliteWrite(NamedTuple):
    """One bulk statement for SQLite's driver, and how a row's values become its parameters
    (SQLAlchemy's own bind processing, looked up once: its statement execution cost more
    per append than SQLite's work on a few rows)."""

    sql: str
    #: A row's values in the statement's order.
    values_of: Callable[[dict[str, Any]], tuple[Any, ...]]
    #: The positions whose values SQLAlchemy processes before binding, and how.
    processed: tuple[tuple[int, Callable[[Any], Any]], ...]

    def parameters(self, rows: list[dict[str, Any]]) -> list[Sequence[Any]]:
        values: list[Sequence[Any]] = [self.values_of(row) for row in rows]
        if not self.processed or not values:
            return values
        # Column by column: one ``map`` per processed column instead of a loop per row.
        columns: list[Sequence[Any]] = list(zip(*values, strict=True))
        for position, process in self.processed:
            columns[position] = list(map(process, columns[position]))
        return list(zip(*columns, strict=True))


def _sqlite_write(
    dialect: Dialect, table: Table, sql: str, keys: tuple[str, ...], columns: tuple[str, ...]
) -> _SqliteWrite:
    """``keys``: where each parameter is in a row; ``columns``: the column it is bound to."""
    processed = []
    for position, column in enumerate(columns):
        impl = table.c[column].type.dialect_impl(dialect)
        process: Callable[[Any], Any] | None = impl.bind_processor(dialect)
        if process is not None and _default_datetime(impl):
            process = _sqlite_datetime(process)
        # SQLAlchemy wraps bytes in a memoryview, which SQLite stores just as it stores bytes.
        if process is not None and not isinstance(impl, LargeBinary):
            processed.append((position, process))
    return _SqliteWrite(sql, operator.itemgetter(*keys), tuple(processed))


def _default_datetime(impl: object) -> bool:
    """Whether ``impl`` is SQLite's ``DATETIME`` with SQLAlchemy's default storage format."""
    return isinstance(impl, SQLITE_DATETIME) and impl._storage_format == SQLITE_DATETIME._storage_format


def _sqlite_datetime(sqlalchemy_process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """SQLAlchemy's SQLite ``DATETIME`` binding (its default storage format: the local
    fields, any time zone dropped), by ``isoformat``: its ``%``-formatting of a dict was 7%
    of ``bench/eventstore.py``'s samples on SQLite (1.31 against 1.05 µs a value).
    Anything but a ``datetime`` goes to SQLAlchemy's own."""

    def process(value: Any) -> Any:
        if type(value) is datetime:
            return value.isoformat(" ", "microseconds")[:26]  # (any UTC offset cut off)
        return sqlalchemy_process(value)

    return process


@functools.cache
def _sqlite_insert(dialect: Dialect, table: Table) -> _SqliteWrite:
    columns = tuple(column.name for column in table.columns)
    marks = ", ".join("?" * len(columns))
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
    return _sqlite_write(dialect, table, sql, columns, columns)


@functools.cache
def _sqlite_update(dialect: Dialect, table: Table, key: str, columns: tuple[str, ...]) -> _SqliteWrite:
    assignments = ", ".join(f"{column} = ?" for column in columns)
    sql = f"UPDATE {table.name} SET {assignments} WHERE {key} = ?"
    return _sqlite_write(dialect, table, sql, (*columns, "_pk"), (*columns, key))


async def _sqlite_executemany(conn: AsyncConnection, write: _SqliteWrite, rows: list[dict[str, Any]]) -> None:
    driver = await driver_connection(conn)
    async with driver.executemany(write.sql, write.parameters(rows)):
        pass


async def insert_rows(conn: AsyncConnection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert many rows (every row has every column of ``table``).

    On PostgreSQL, up to :data:`SMALL_INSERT_ROWS` rows are pipelinable (sent with whatever
    else is issued inside :func:`pipeline`); more go by one binary COPY, which must not be.
    """
    if not rows:
        return
    if not is_postgres(conn):
        await _sqlite_executemany(conn, _sqlite_insert(conn.dialect, table), rows)
        return
    columns = [column.name for column in table.columns]
    json_positions = [i for i, column in enumerate(table.columns) if isinstance(column.type, JSON)]
    values_of = operator.itemgetter(*columns)
    driver = await driver_connection(conn)
    if len(rows) <= SMALL_INSERT_ROWS:
        # Binary parameters (%b) as COPY's; JSON as untyped text (%s), which the column parses.
        marks = ", ".join("%s" if isinstance(column.type, JSON) else "%b" for column in table.columns)
        params = []
        for row in rows:
            values = list(values_of(row))
            for position in json_positions:
                values[position] = _json_serializer(values[position])
            params.append(values)
        statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
        async with driver.cursor() as cursor:
            await cursor.executemany(statement, params)
        return
    # Binary COPY: bytea payloads and timestamps go over as they are, with no text escaping.
    statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    async with driver.cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types([_copy_type(conn, column) for column in table.columns])
        for row in rows:
            values = values_of(row)
            if json_positions:
                values = list(values)
                for position in json_positions:
                    values[position] = _json_serializer(values[position])
            await copy.write_row(values)


async def update_rows(
    conn: AsyncConnection, table: Table, key: str, columns: tuple[str, ...], rows: list[dict[str, Any]]
) -> None:
    """Set ``columns`` on many rows; each row holds the new values and its key under ``"_pk"``."""
    if not rows:
        return
    if not is_postgres(conn):
        await _sqlite_executemany(conn, _sqlite_update(conn.dialect, table, key, columns), rows)
        return
    names = ["_pk", *columns]
    types = [_pg_type(conn, table.c[key]), *(_pg_type(conn, table.c[c]) for c in columns)]
    arrays = [[row["_pk"] for row in rows]]
    arrays += [_array_values(table.c[column], [row[column] for row in rows]) for column in columns]
    # Binary arrays (%b): text ones cost psycopg ~8x as much to build, per element in Python.
    unnest = ", ".join(f"%b::{pg_type}[]" for pg_type in types)
    assignments = ", ".join(f"{c} = v.{c}" for c in columns)
    sql = (
        f"UPDATE {table.name} AS t SET {assignments} FROM unnest({unnest}) AS v({', '.join(names)}) "
        f"WHERE t.{key} = v._pk"
    )
    driver = await driver_connection(conn)
    async with driver.cursor() as cursor:
        await cursor.execute(sql, arrays)


def _array_values(column: Column[Any], values: list[Any]) -> list[Any]:
    """A column's values as one binary array parameter takes them (one element type)."""
    if isinstance(column.type, JSON):
        return [_json_serializer(value) for value in values]
    if isinstance(column.type, Float):  # an int among floats would make a mixed-type array
        return [None if value is None else float(value) for value in values]
    return values


def _copy_type(conn: AsyncConnection, column: Column[Any]) -> str:
    """Binary COPY type of a column; JSON goes as text (its serialisation), which json accepts."""
    return "text" if isinstance(column.type, JSON) else _pg_type(conn, column).lower()


def _pg_type(conn: AsyncConnection, column: Column[Any]) -> str:
    return "text" if isinstance(column.type, String) else column.type.compile(dialect=conn.dialect)


#: A statement and its rows of values (executed once per row; ``None``: once, as built).
Statement = tuple[UpdateBase | TextClause | Select[Any], Sequence[dict[str, Any]] | None]


async def commit_in_one_round_trip(conn: AsyncConnection, statements: Sequence[Statement]) -> Any:
    """PostgreSQL: run ``statements`` as one transaction whose BEGIN, statements and COMMIT
    go in one round trip, so that nothing waits on this client between them (a lock taken
    by one is held only as long as the server takes for the rest); return the first row of
    the last statement (a query). An error rolls the whole transaction back and is raised
    (psycopg's). ``conn`` is left in autocommit mode (the pool resets it)."""
    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
    driver = await driver_connection(conn)
    try:
        async with driver.cursor() as cursor, driver.cursor() as last:
            async with driver.pipeline():
                await cursor.execute("BEGIN")
                for statement in statements[:-1]:
                    await _send(conn, cursor, statement)
                await _send(conn, last, statements[-1])
                await cursor.execute("COMMIT")
            return await last.fetchone()
    except BaseException:
        await driver.rollback()  # (an error leaves the transaction open, aborted)
        raise


async def _send(conn: AsyncConnection, cursor: Any, statement: Statement) -> None:
    """Queue ``statement`` (compiled for the driver, with its rows) on ``cursor`` of a pipeline."""
    clause, rows = statement
    compiled = clause.compile(
        dialect=conn.dialect,
        column_keys=list(rows[0]) if rows else None,
        compile_kwargs={"render_postcompile": True},
    )
    if rows:
        await cursor.executemany(str(compiled), [compiled.construct_params(row) for row in rows])
    else:
        await cursor.execute(str(compiled), compiled.params)


async def driver_connection(conn: AsyncConnection) -> Any:
    """The driver's connection under SQLAlchemy's (psycopg's, or :mod:`.sqlite_driver`'s)."""
    raw = await conn.get_raw_connection()
    return raw.driver_connection
