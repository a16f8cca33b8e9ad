"""The event store: append events with their view updates atomically, read them back.

Each write is all or nothing: its events and every view change they imply commit, or
nothing of it does. Appends are serialised (in-process lock plus a database lock), so
sequence numbers are dense and readers never see a later seq before an earlier one; the
writers queued at the lock share one transaction (group commit, :mod:`.group`), each with
its own checks and answer. The log is only ever inserted into, except by retention, which
deletes a whole expired job at a time (:mod:`.retention`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from armada.eventstore import dialects, job_views, schema
from armada.eventstore.appending import PreparedEvents, log_row
from armada.eventstore.changed import ChangedJobs
from armada.eventstore.checkpoints import Checkpoints
from armada.eventstore.group import AppendGroup, CommitWork
from armada.eventstore.notify import ChangeNotifier
from armada.eventstore.recent import RecentEvents, StoredEvent
from armada.eventstore.recent_states import RecentJobStates
from armada.eventstore.unreadable import UnreadableRecords, decode_log_rows
from armada.eventstore.usage_memory import UsageMemory
from armada.eventstore.waits import LaneWaits
from armada.eventstore.writelock import Lane, WriteLock
from armada.model.errors import ArmadaError, Unavailable
from armada.model.events import Event, EventDecoder, decode_event
from armada.tracing import span

__all__ = ["Draft", "EventStore", "Lane", "PreparedEvents", "StoredEvent", "Transaction", "log_row"]


class Transaction:
    """A write: read the views consistently, then stage events to append.

    Obtained from :meth:`EventStore.transaction`; the staged events are appended when the
    ``async with`` block exits without error, and discarded if not.
    """

    def __init__(self, group: AppendGroup, changed: ChangedJobs) -> None:
        self._group = group
        #: Sequence number of the newest event before this write's own (staged ones included).
        self.head = group.last
        #: Sequence number of this write's last event, once committed.
        self.last_seq = 0
        self.staged: list[Event] = []
        self._prepared: PreparedEvents | None = None
        self._changed = changed

    async def views(self, *, jobs: bool = True) -> AsyncConnection:
        """The connection to read the views with, inside the write's transaction.

        What writers before this one in its group staged is written first, so the views
        read as if they had committed. ``jobs=False`` promises the reads touch no job or
        run row, which spares that write when only jobs changed (submission's queue check).
        """
        await self._group.write_pending(jobs=jobs)
        return self._group.conn

    def append(self, events: Sequence[Event] | PreparedEvents) -> None:
        if isinstance(events, PreparedEvents):
            self._prepared = events if not self.staged else None
            self.staged.extend(events.events)
        else:
            self._prepared = None
            self.staged.extend(events)

    async def jobs_changed_since(self, seq: int, job_ids: Collection[str]) -> set[str]:
        """Those of ``job_ids`` with events appended after ``seq`` (by earlier writers of
        this group too).

        Answered from memory when this process made every append since ``seq`` (the common
        case: one replica), else from the log.
        """
        wanted = set(job_ids)
        group = self._group
        known = self._changed.among(wanted, seq, group.head)
        if known is None:
            events = schema.events
            query = select(events.c.job_id).distinct().where(events.c.seq > seq)
            group.statements_on_loop(False)  # another replica's appends: maybe many
            known = wanted.intersection(await group.conn.scalars(query))
        return known | (wanted & group.job_ids)

    def at_commit(self, work: CommitWork) -> None:
        """Leave ``work`` (deletes) for the commit of this write's group (:meth:`AppendGroup.at_commit`)."""
        self._group.at_commit(work)

    def prepared(self) -> PreparedEvents:
        """Everything staged, prepared: the caller's own preparation when it covers it all."""
        if self._prepared is not None and len(self._prepared.events) == len(self.staged):
            return self._prepared
        return PreparedEvents(self.staged)


class Draft(Protocol):
    """Events a write built from the views, and the jobs whose view rows it read."""

    @property
    def events(self) -> Sequence[Event]: ...

    @property
    def job_ids(self) -> Collection[str]: ...


DraftT = TypeVar("DraftT", bound=Draft)


class EventStore:
    def __init__(self, engine: AsyncEngine, notifier: ChangeNotifier | None = None) -> None:
        self.engine = engine
        self.notifier = notifier or ChangeNotifier()
        self._append_lock = WriteLock(on_abandoned=self._end_turn)
        self._group: AppendGroup | None = None
        #: The next group, begun while the current one commits (see :meth:`_begin_ahead`).
        self._ahead: asyncio.Task[AppendGroup] | None = None
        self._committing: set[asyncio.Task[None]] = set()
        self._closed = False
        #: Committed groups and the writers they served (writers per group: group commit's gain).
        self.appended_groups = 0
        self.appended_writers = 0
        self._recent = RecentEvents()
        self._states = RecentJobStates()
        self._changed = ChangedJobs()
        self._usage = UsageMemory()
        #: Called with each committed batch of events (metrics); must be cheap and not raise.
        self.listeners: list[Callable[[Sequence[Event]], None]] = []
        #: Stored records this process could not decode (every reader reports here).
        self.unreadable = UnreadableRecords()
        #: Where each lane's writes spent their time (metrics: who waits for whom).
        self.waits = LaneWaits()
        self._checkpoints = Checkpoints(engine)

    @property
    def append_lock_busy_seconds(self) -> float:
        """Seconds appends have held the serialised append lock (see :class:`WriteLock`)."""
        return self._append_lock.busy_seconds

    @asynccontextmanager
    async def transaction(self, *, lane: Lane = Lane.BULK) -> AsyncIterator[Transaction]:
        """Serialised write whose staged events are appended on success.

        ``lane`` says who is served first among the writers waiting in this process (see
        :mod:`armada.eventstore.writelock`). The write joins the group of writers served by
        one database transaction (see :mod:`armada.eventstore.group`); it returns once that
        has committed. An urgent or prompt write closes its group to bulk writers, and a
        prompt one to urgent writers too: it is committed once the writers it still takes
        have had their turn. Once
        :meth:`close` has been called a new write is refused with :class:`Unavailable`.
        """
        with span("armada.append", lane=lane.name.lower()):
            if self._closed:
                raise Unavailable("the event store is closed: the server is shutting down")
            queued = time.monotonic()
            await self._append_lock.acquire(lane)
            turn = time.monotonic()
            group = self._group
            if group is None:
                try:
                    group = self._group = await self._begin()
                except BaseException:
                    self._release()
                    raise
            tx = Transaction(group, self._changed)
            try:
                yield tx
            except BaseException as exc:
                if not isinstance(exc, ArmadaError):  # a domain error touched nothing shared
                    group.failure = group.failure or exc
                self._end_turn()
                raise
            tx.last_seq = group.add(tx.prepared() if tx.staged else None)
            # A write someone waits on (the decisions every queued job waits for, a client's
            # submission) is not held back by the bulk writers queued behind it.
            self._end_turn(lane)
            turn_ended = time.monotonic()
            try:
                await asyncio.shield(group.outcome)
            finally:
                self.waits.add(lane, turn - queued, turn_ended - turn, time.monotonic() - turn_ended)

    def _end_turn(self, lane: Lane | None = None, *, commit: bool = False) -> None:
        """Hand the open group to the next queued writer it takes, or commit it (``commit``:
        always); ``lane``: that of the writer whose turn ended (see :meth:`AppendGroup.narrow`)."""
        group = self._group
        if group is None:
            self._release()
            return
        group.turns += 1
        if lane is not None:
            group.narrow(lane)
        open_to_more = not commit and group.failure is None and not group.full
        if open_to_more and self._append_lock.hand_off(group.takes):
            return
        self._group = None
        self._track(asyncio.create_task(self._commit(group), name="append-group-commit"))
        self._begin_ahead()

    def _track(self, task: asyncio.Task[None]) -> None:
        """Keep ``task`` (a commit, a checkpoint, a rollback) until it is done: :meth:`close`
        waits for it."""
        self._committing.add(task)
        task.add_done_callback(self._committing.discard)

    def _begin_ahead(self) -> None:
        """With writers queued behind the group now committing, begin the next group at once.

        Its lock request waits in PostgreSQL for this commit and its head read follows it,
        so the next writer finds the transaction ready. Begun by that writer instead, the
        round trips would wait behind what the commit sets off on the event loop (the
        follower applying the group, the writers' answers): ~30 ms a group in
        ``bench/e2e.py``, a quarter of the time the append lock was held. (PostgreSQL only:
        SQLite's ``BEGIN IMMEDIATE`` would hold a thread waiting for the commit.)
        """
        if self._ahead is None and dialects.is_postgres(self.engine) and self._append_lock.has_waiters():
            self._ahead = asyncio.create_task(
                AppendGroup.begin(self.engine, self._usage), name="append-group-ahead"
            )

    async def _begin(self) -> AppendGroup:
        """The group begun ahead if there is one, else a new one."""
        ahead, self._ahead = self._ahead, None
        return await (ahead if ahead is not None else AppendGroup.begin(self.engine, self._usage))

    def _release(self) -> None:
        """Hand the lock to the next queued writer; with none, end a group begun ahead."""
        self._append_lock.release()
        if not self._append_lock.locked() and self._ahead is not None:
            ahead, self._ahead = self._ahead, None
            self._track(asyncio.create_task(_abandon(ahead), name="append-group-abandon"))

    async def close(self) -> None:
        """Refuse new writes, serve those already queued, and wait for every group to commit.

        Called before the engine is disposed: a group still committing holds a connection,
        and its writers are owed their answer (a commit cut short by the end of the event
        loop would leave them without one and the connection open).
        """
        self._closed = True
        # Behind every queued writer (urgent and prompt ones overtake it, but new ones are refused
        # from here on): once it holds the lock, the open group, if any, is the last one.
        await self._append_lock.acquire()
        self._end_turn(commit=True)
        while self._committing:
            await asyncio.wait(set(self._committing))

    async def _commit(self, group: AppendGroup) -> None:
        self.notifier.committing(group.last)
        try:
            await group.commit()
        except BaseException as exc:
            group.failure = group.failure or exc
        finally:
            self._release()
        if group.failure is None:
            self._usage.committed(group.head, group.written, group.known)
        if group.failure is None and group.events:
            self._recent.add(group.head + 1, group.events)
            self._states.add(group.head + 1, group.events)
            self._changed.add(group.head + 1, group.last, (event.job_id for event in group.events))
            self.appended_groups += 1
            self.appended_writers += group.writers
            if (checkpoint := self._checkpoints.appended(len(group.events))) is not None:
                self._track(checkpoint)  # :meth:`close` waits for it too
            job_sets = {(event.queue, event.job_set_id) for event in group.events}
            self.notifier.publish(group.last, first=group.head + 1, job_sets=job_sets)
            for listener in self.listeners:
                listener(group.events)
        self.notifier.committed()
        group.settle()

    async def append_optimistically(
        self, build: Callable[[AsyncConnection], Awaitable[DraftT]], *, lane: Lane = Lane.BULK
    ) -> DraftT:
        """Append what ``build`` makes of the views, having read them outside the lock.

        Under load a write spends most of its time queued for the serialised append, so
        ``build`` first runs on a plain connection and its events are prepared before the
        lock is taken. Inside, if any job it read changed meanwhile (a cancellation landed,
        say), it runs again on the transaction's connection and that draft is appended
        instead. ``build`` must read nothing but those jobs' (and their runs') rows.
        """
        async with self.engine.connect() as conn:
            seen = await dialects.log_head(conn)
            draft = await build(conn)
        return (await self.append_checked(draft, seen, build, lane=lane))[0]

    async def append_checked(
        self,
        draft: DraftT,
        seen: int,
        rebuild: Callable[[AsyncConnection], Awaitable[DraftT]],
        *,
        lane: Lane = Lane.BULK,
    ) -> tuple[DraftT, int]:
        """Append ``draft``, built from the views as of ``seq`` ``seen``, or ``rebuild`` it.

        The draft's events are prepared before the lock; inside it, if any of its jobs has
        changed after ``seen``, ``rebuild`` runs on the transaction's connection and its
        draft is appended instead. Returns the draft appended and the seq of its last event.
        """
        prepared = PreparedEvents(draft.events)
        async with self.transaction(lane=lane) as tx:
            if await tx.jobs_changed_since(seen, draft.job_ids):
                draft = await rebuild(await tx.views())
                tx.append(draft.events)
            else:
                tx.append(prepared)
        return draft, tx.last_seq

    async def append(self, events: Sequence[Event], *, lane: Lane = Lane.BULK) -> int:
        """Append ``events`` (and their view updates) atomically; return the last seq."""
        if not events:
            return await self.head()
        async with self.transaction(lane=lane) as tx:
            tx.append(events)
        return tx.last_seq

    @property
    def known_head(self) -> int:
        """The newest seq this process knows committed: its own appends and those it was
        told of (no query; :meth:`head` asks the database)."""
        return self.notifier.head

    async def head(self) -> int:
        """Sequence number of the newest committed event (0 for an empty log)."""
        async with self.engine.connect() as conn:
            return await dialects.log_head(conn)

    async def read(
        self,
        after_seq: int = 0,
        *,
        queue: str | None = None,
        job_set_id: str | None = None,
        job_id: str | None = None,
        until_seq: int | None = None,
        limit: int = 1000,
        decode: EventDecoder = decode_event,
    ) -> list[StoredEvent]:
        """Events after ``after_seq`` (exclusive), oldest first, optionally of one job set or job.

        ``decode`` reads the payloads fetched from the database (a reader that only re-encodes
        events can skip building parts it copies verbatim); recent events kept in memory are
        returned as decoded when appended (a job set's too, up to a given ``until_seq``: the
        streams' reads). Memory answers only when it holds everything up to ``until_seq``
        (else up to the head this process was told of): a reader's ``until_seq`` comes from
        the database and can be ahead of that head, and a reader given less than it asked for
        would move past the rest."""
        known_head = self.notifier.head if until_seq is None else until_seq
        if queue is None and job_set_id is None and job_id is None:
            recent = self._recent.after(after_seq, known_head, limit)
            if recent is not None:
                return [stored for stored in recent if until_seq is None or stored.seq <= until_seq]
        elif queue is not None and job_set_id is not None and job_id is None and until_seq is not None:
            if until_seq <= self.notifier.head and not self.notifier.job_sets.since(
                (queue, job_set_id), after_seq
            ):
                return []  # no commit seen here touched the job set after ``after_seq``
            held = self._recent.of_job_set(queue, job_set_id, after_seq, until_seq, limit)
            if held is not None:
                return held
        events = schema.events
        query = select(events.c.seq, events.c.payload).where(events.c.seq > after_seq)
        if queue is not None:
            query = query.where(events.c.queue == queue)
        if job_set_id is not None:
            query = query.where(events.c.job_set_id == job_set_id)
        if job_id is not None:
            query = query.where(events.c.job_id == job_id)
        if until_seq is not None:
            query = query.where(events.c.seq <= until_seq)
        query = query.order_by(events.c.seq).limit(limit)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
            return await decode_log_rows(conn, rows, self.unreadable, decode)

    async def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The state of each of ``job_ids`` that exists: as this process's recent appends
        left it where they tell (:mod:`.recent_states`), else from the views."""
        found, missing = self._states.states(job_ids, self.notifier.head)
        if missing:
            async with self.engine.connect() as conn:
                found |= await job_views.job_state_values(conn, missing)
        return found

    def forget_recent(self, newest_deleted: int, job_ids: Collection[str]) -> None:
        """Retention is deleting ``job_ids``, their events up to seq ``newest_deleted``: a
        stream or a status call must not be served what the database no longer holds. Their
        states kept are dropped (those of jobs still flowing stay, for status pollers); the
        events kept only if they reach back that far (expired jobs' events are old, the
        events kept the newest: the scheduler's follower keeps reading them from memory)."""
        self._states.forget(job_ids)
        self._usage.forget()
        if self._recent.holds_up_to(newest_deleted):
            self._recent = RecentEvents()

    def rewind(self, head: int) -> None:
        """Forget what this process knew of the log past ``head``: the database went back in
        time (a restore, or a failover to a standby that had not received the newest commits)."""
        self.notifier.rewind(head)
        self._usage.forget()
        self._recent = RecentEvents()
        self._states.clear()

    async def wait_for_change(
        self, after_seq: int, timeout: float | None = None, *, rewinds: int | None = None
    ) -> int:
        """Wait until an event after ``after_seq`` commits (or timeout, or the log went back
        since the notifier's count ``rewinds``); return the head."""
        return await self.notifier.wait(after_seq, timeout, rewinds=rewinds)

    async def wait_for_job_set(
        self, queue: str, job_set_id: str, after_seq: int, timeout: float, *, rewinds: int
    ) -> int:
        """As :meth:`wait_for_change`, woken only by commits that may touch the job set."""
        return await self.notifier.wait_job_set((queue, job_set_id), after_seq, timeout, rewinds=rewinds)


async def _abandon(begun: asyncio.Task[AppendGroup]) -> None:
    """End a group begun ahead that no writer came for: with no writer in it, its commit
    rolls it back (releasing the database's lock)."""
    try:
        group = await begun
    except Exception:  # the database's error: nothing was begun
        return
    await group.commit()
