"""Group commit: the writers queued at the append lock share one database transaction.

Appends are serialised, and under load most of an append's cost is per transaction (the
lock, the head read, the bulk statements' round trips, the commit), not per row. So the
lock's holder, when it is done, hands its turn to the next queued writer *inside the same
transaction*; when nobody is queued (or the group is large, or a writer somebody waits on
has had its turn and no other such writer is queued: see the lanes of
:mod:`.writelock`), the group is written — one COPY per table (pipelined INSERTs for a
few rows: :mod:`.appending`), one round of view updates, one NOTIFY — and committed once.

Each writer still runs its own reads and checks, and a writer that fails with a domain
error (bad input, a conflict) leaves nothing in the group and fails alone. A writer that
reads the views first gets what the writers before it in the group staged written into the
transaction (:meth:`AppendGroup.write_pending`), so it reads what it would have read had
they committed. Any other failure (the database's, or a writer cancelled in the middle of
its reads) leaves the transaction unusable: the group is rolled back and each of its
writers gets the error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncTransaction

from armada.eventstore import dialects, sqlite_driver
from armada.eventstore.appending import PreparedEvents, write
from armada.eventstore.usage_memory import KnownFacts, UsageMemory
from armada.eventstore.writelock import Lane
from armada.model.events import Event

#: A group takes no further writers once it holds this many events (bounds its latency, and
#: so how long a submission or the decisions wait behind it: about one cycle's leases).
#: 2,500 cost ~9% of `bench/e2e.py`'s throughput (more, smaller transactions; 3,149-3,440
#: against 3,740-3,856 jobs/s the same hour) for no gain in a submission's p99.
MAX_GROUP_EVENTS = 5_000
#: Flushes of at most this many events run on the event loop's thread on SQLite, as do the
#: group's other statements and its writers' reads of the small views; bigger flushes and
#: reads of job views run on the connection's thread (:mod:`.sqlite_driver`). 500 events
#: take SQLite ~3 ms to write.
ON_LOOP_EVENTS = 500
#: ... or once this many writers have had their turn, refused ones included: writers that
#: keep arriving (a refused one stages nothing) must not hold back the commit the first wait for.
MAX_GROUP_TURNS = 100


#: Work a writer leaves for its group's commit: given the group's connection and the jobs
#: that writers after it staged events for (see :meth:`AppendGroup.at_commit`).
CommitWork = Callable[[AsyncConnection, Collection[str]], Awaitable[None]]


class AppendGroup:
    """One write transaction shared by consecutive holders of the append lock."""

    def __init__(
        self,
        conn: AsyncConnection,
        driver: object,
        transaction: AsyncTransaction,
        head: int,
        memory: UsageMemory | None = None,
    ) -> None:
        self.conn = conn
        #: The driver's connection under :attr:`conn` (switched by :meth:`statements_on_loop`).
        self._driver = driver
        self._transaction = transaction
        #: The log's committed head when the group began.
        self.head = head
        #: The newest event already written in this transaction (``head`` until a flush).
        self.written = head
        self.pending: list[PreparedEvents] = []
        #: Every event the group's writers staged, in log order.
        self.events: list[Event] = []
        self.job_ids: set[str] = set()
        self.writers = 0
        #: Turns taken in the group, by writers that staged events or were refused alike.
        self.turns = 0
        #: The lanes whose writers may still join (see :meth:`narrow`).
        self.takes: frozenset[Lane] = frozenset(Lane)
        #: Work left for the commit, each with how many events were staged when it was left.
        self._at_commit: list[tuple[int, CommitWork]] = []
        #: Usage accounting's facts from this process's earlier appends (none: read the views).
        self._memory = memory
        #: What the group's batches start from and learnt (from its first flush on).
        self.known: KnownFacts | None = None
        #: Why the transaction cannot commit, if it cannot.
        self.failure: BaseException | None = None
        self.outcome: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.outcome.add_done_callback(_retrieve)  # a group whose writers all left still settles

    @classmethod
    async def begin(cls, engine: AsyncEngine, memory: UsageMemory | None = None) -> AppendGroup:
        """Open the write transaction and take the cross-process append lock; ``memory``:
        usage accounting's facts, read at the group's first write (when the commits before
        it have been kept there)."""
        conn = await engine.connect()
        try:
            conn = await conn.execution_options(**{dialects.WRITE_OPTION: True})
            # SQLite's BEGIN IMMEDIATE waits for the write lock, maybe for a transaction of
            # this process that needs the loop to finish: it runs on the connection's thread.
            transaction = await conn.begin()
            driver = await dialects.driver_connection(conn)
            sqlite_driver.run_on_loop(driver, True)  # holding the lock: nothing below waits
            return cls(conn, driver, transaction, await dialects.lock_log(conn), memory)
        except BaseException:
            await conn.close()
            raise

    @property
    def last(self) -> int:
        """Seq of the last event staged so far (the next writer's come after it)."""
        return self.head + len(self.events)

    @property
    def full(self) -> bool:
        """Whether the group takes no more writers (it is committed at the end of this turn)."""
        return len(self.events) >= MAX_GROUP_EVENTS or self.turns >= MAX_GROUP_TURNS

    def narrow(self, lane: Lane) -> None:
        """After a turn of ``lane``: a writer somebody waits on closes the group to bulk writers;
        once a prompt writer is in, to urgent ones too (the decisions' write, ~2,500 leases,
        would add to a client's wait: they start the next group instead)."""
        if lane is Lane.URGENT:
            self.takes = self.takes - {Lane.BULK}
        elif lane is Lane.PROMPT:
            self.takes = self.takes & {Lane.PROMPT}

    def add(self, prepared: PreparedEvents | None) -> int:
        """Count a writer in, staging its events (if any) after everything before them.

        Returns the seq of its last event. A writer with no events still commits with the
        group (it may have written directly, as replay does).
        """
        self.writers += 1
        if prepared is not None:
            self.pending.append(prepared)
            self.events += prepared.events
            self.job_ids.update(event.job_id for event in prepared.events)
        return self.last

    def at_commit(self, work: CommitWork) -> None:
        """Run ``work`` when the group commits, after every writer's turn and events, in the
        same transaction: told which jobs the writers after it staged events for, it holds
        the append lock for its statements alone, not for turnarounds of its own."""
        self._at_commit.append((len(self.events), work))

    async def write_pending(self, *, jobs: bool = True) -> None:
        """Write what earlier writers staged, so that a read on :attr:`conn` sees it.

        ``jobs=False``: the caller reads no job or run rows, so only queue, executor and
        retry-policy changes need writing first, and its reads (of small views) run on the
        event loop's thread.
        """
        if self.pending and (jobs or any(part.changes.ordered for part in self.pending)):
            await self._flush(notify=False)
        self.statements_on_loop(not jobs)

    def statements_on_loop(self, on_loop: bool) -> None:
        """Run the next statements on :attr:`conn` on the event loop's thread, or on the
        connection's own: reads that may return many rows (job views, the log) must not
        stall the loop. (SQLite only: PostgreSQL's driver has no thread.)"""
        sqlite_driver.run_on_loop(self._driver, on_loop)

    async def commit(self) -> None:
        """Write the rest, notify once, commit (or roll back a failed or empty group); close."""
        try:
            if self.failure is not None or not self.writers:
                self.statements_on_loop(True)
                await self._transaction.rollback()
                return
            if self.pending:
                await self._flush(notify=True)
            elif self.written > self.head:
                await dialects.notify(self.conn, self.written)
            # On the loop's thread too: a COMMIT never checkpoints SQLite's log (.checkpoints).
            self.statements_on_loop(True)
            for staged, work in self._at_commit:  # (a batch of deletes: small enough for the loop)
                await work(self.conn, {event.job_id for event in self.events[staged:]})
            await self._transaction.commit()
        finally:
            await self.conn.close()

    def settle(self) -> None:
        if self.failure is None:
            self.outcome.set_result(None)
        elif isinstance(self.failure, Exception):
            self.outcome.set_exception(self.failure)
        else:  # cancelled or interrupted: the others get an error of their own
            stopped = GroupAborted(f"a writer sharing the transaction stopped: {self.failure!r}")
            self.outcome.set_exception(stopped)

    async def _flush(self, *, notify: bool) -> None:
        batch, self.pending = PreparedEvents.combine(self.pending), []
        self.statements_on_loop(len(batch.events) <= ON_LOOP_EVENTS)
        if self.known is None and self._memory is not None:
            self.known = self._memory.facts_at(self.head)
        self.written = await write(self.conn, batch, self.written, notify=notify, known=self.known)


class GroupAborted(RuntimeError):
    """The shared transaction was abandoned by another writer (it was cancelled mid-read)."""


def _retrieve(outcome: asyncio.Future[None]) -> None:
    if not outcome.cancelled():
        outcome.exception()
