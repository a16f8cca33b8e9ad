"""Retention: the leader prunes finished jobs older than ``retention.expireAfter``.

Each batch is chosen, with its events, on a plain connection (and archived, if asked,
before anything is deleted), then deleted in one transaction: the log and the views change
together, so a rebuild or check sees a batch wholly or not at all. On PostgreSQL that
transaction is the batch's own, beside the appends, and holds the append lock only for its
last statements (:func:`retention.delete_beside`); on SQLite it is an append group's, the
deletes run as it commits. A job that changed since it was chosen is left for a later
round. Pruning appends no event, so the scheduler's state (which holds no finished job) and
its usage history (kept in memory from the runs it sees) are untouched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import NamedTuple

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, fleet_history, retention
from armada.eventstore.store import EventStore
from armada.services import archive
from armada.services.settings import RetentionSettings
from armada.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

#: After each batch the pruner rests this many times as long as the batch took, so that it
#: takes at most a fifth of the append lock's time, less when writers queue for it (their
#: wait lengthens the batch): under load a batch of 25 held it ~35 ms, not its idle ~5 ms,
#: and back to back batches took the submissions' p99 from 240 to 380 ms on SQLite.
PAUSE = 4.0


#: Heartbeats and node reports read per round of compaction (payloads only by their start).
FLEET_CHUNK = 1000


class Batch(NamedTuple):
    chosen: int
    pruned: int
    #: Not deleted this time (the append lock stayed busy, or a job changed): try again.
    deferred: bool = False


class Pruner:
    """Prunes expired jobs; its figures (totals, oldest kept, database size) feed metrics."""

    def __init__(
        self,
        store: EventStore,
        settings: RetentionSettings,
        *,
        is_leader: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.settings = settings
        self.is_leader = is_leader
        self.clock = clock
        #: Jobs this process pruned since it started.
        self.pruned_jobs = 0
        #: Heartbeats and node reports this process compacted away since it started.
        self.compacted_fleet_events = 0
        #: Earliest last transition of a finished job kept, as of the last look (None: none).
        self.oldest_retained: datetime | None = None
        #: Bytes the database took at the last look.
        self.database_bytes = 0
        #: Seconds this process's batches held the append lock (PostgreSQL: as the server
        #: measured it, from taking it to the COMMIT; SQLite: their deletes at the commit).
        self.locked_seconds = 0.0
        self._task: asyncio.Task[None] | None = None

    def cutoff(self) -> datetime | None:
        """Jobs whose last transition is before this have expired (None: retention is off)."""
        keep = self.settings.expire_after_seconds
        if not keep:
            return None
        return datetime.fromtimestamp(self.clock(), UTC) - timedelta(seconds=keep)

    async def prune_once(self, cutoff: datetime | None = None) -> int:
        """Prune every job expired now (or finished before ``cutoff``), a batch at a time;
        return how many were pruned."""
        cutoff = cutoff or self.cutoff()
        if cutoff is None:
            return 0
        pruned = sum([batch.pruned async for batch in self.batches(cutoff)])
        compacted = await self.compact_fleet_history(cutoff)
        if pruned or compacted:
            await retention.release_space(self.store.engine)
            log.info("pruned expired jobs", jobs=pruned, fleet_events=compacted, cutoff=cutoff.isoformat())
        return pruned

    async def compact_fleet_history(self, cutoff: datetime) -> int:
        """Remove the heartbeats and node reports before ``cutoff`` that the views do not need
        (:mod:`armada.eventstore.fleet_history`), a chunk at a time, resting like job batches;
        return how many went. What a chunk keeps is carried into the next, so each event is
        read once and judged beside everything after it."""
        removed, after = 0, 0
        kept: list[fleet_history.FleetEvent] = []
        while self.is_leader():
            started = time.monotonic()
            async with self.store.engine.connect() as conn:
                chunk = await fleet_history.older_fleet_events(conn, cutoff, FLEET_CHUNK, after)
            if not chunk:
                break
            history = kept + chunk
            doomed = fleet_history.superseded(history)
            if doomed:
                removed += await self._at_commit(partial(fleet_history.delete_events, seqs=doomed))
            gone = set(doomed)
            kept = [event for event in history if event.seq not in gone]
            after = chunk[-1].seq
            if len(chunk) < FLEET_CHUNK:
                break
            await asyncio.sleep((time.monotonic() - started) * PAUSE)
        self.compacted_fleet_events += removed
        return removed

    async def batches(self, cutoff: datetime) -> AsyncIterator[Batch]:
        """Prune the jobs finished before ``cutoff`` batch after batch, resting between them
        (:data:`PAUSE`), until none is left, a batch prunes nothing (jobs that changed, the
        newest event's: the next round tries again) or this replica no longer leads. A
        batch deferred on PostgreSQL (the lock stayed busy, a job changed) is chosen again
        after the rest."""
        while True:
            started = time.monotonic()
            batch = await self.prune_batch(cutoff)
            yield batch
            done = batch.chosen < self.settings.batch_size or not (batch.pruned or batch.deferred)
            if done or not self.is_leader():
                return  # (two replicas pruning would be safe, each batch being re-checked: only wasteful)
            await asyncio.sleep((time.monotonic() - started) * PAUSE)

    async def prune_batch(self, cutoff: datetime) -> Batch:
        """Choose (and archive) a batch outside the append lock, then delete it: on
        PostgreSQL in a transaction of its own that holds the lock only for its last few
        statements (:func:`retention.delete_beside`), on SQLite (whose one writer at a time
        is the append lock) at the commit of the append group it joins. Either way only the
        jobs no append touched since they were chosen go, and nothing waits on a turnaround
        of the pruner's under the lock."""
        async with self.store.engine.connect() as conn:
            chosen = await retention.choose(conn, cutoff, self.settings.batch_size, self.store.unreadable)
            if not chosen.events:
                return Batch(chosen.found, 0)
            archived = self.settings.archive_dir
            records = await retention.job_records(conn, sorted(chosen.events)) if archived else []
        if records:
            await asyncio.to_thread(archive.write_batch, Path(self.settings.archive_dir), records)
        if dialects.is_postgres(self.store.engine):
            if not await self._delete_beside(chosen):
                return Batch(chosen.found, 0, deferred=True)
            doomed = set(chosen.events)
        else:
            doomed = await self._delete_at_commit(chosen)
        self.pruned_jobs += len(doomed)
        return Batch(chosen.found, len(doomed))

    async def _delete_beside(self, chosen: retention.Chosen) -> bool:
        """Delete the batch in a transaction of its own (PostgreSQL); return whether it went
        (not: a job changed, or the lock stayed busy)."""
        self._forget(chosen, chosen.events)  # first: memory never answers for what is gone
        try:
            async with self.store.engine.connect() as conn:
                self.locked_seconds += await retention.delete_beside(conn, chosen, chosen.events)
        except retention.Deferred as why:
            log.info("pruning batch deferred", reason=str(why))
            return False
        return True

    async def _delete_at_commit(self, chosen: retention.Chosen) -> set[str]:
        """Delete the batch at the commit of the append group this write joins (SQLite):
        the jobs no writer of the group nor any append since touched. Return those."""
        wanted = sorted(chosen.events)
        doomed: set[str] = set()

        async def delete(conn: AsyncConnection, touched_after: Collection[str]) -> None:
            started = time.monotonic()
            doomed.update(unchanged.difference(touched_after))
            self._forget(chosen, doomed)  # in the lock, the group's writers done: nothing refills it
            await retention.delete_jobs(conn, chosen, doomed)
            self.locked_seconds += time.monotonic() - started

        async with self.store.transaction() as tx:
            unchanged = set(wanted) - await tx.jobs_changed_since(chosen.seen, wanted)
            if unchanged:
                tx.at_commit(delete)
        return doomed

    def _forget(self, chosen: retention.Chosen, job_ids: Collection[str]) -> None:
        """Drop what memory holds that the deletion of ``job_ids`` takes from the database."""
        newest = max((stored.seq for job_id in job_ids for stored in chosen.events[job_id]), default=None)
        if newest is not None:
            self.store.forget_recent(newest, job_ids)

    async def _at_commit(self, delete: Callable[[AsyncConnection], Awaitable[int]]) -> int:
        """Run ``delete`` at the commit of the append group this write joins; return its count."""
        counts: list[int] = []

        async def work(conn: AsyncConnection, _touched: Collection[str]) -> None:
            counts.append(await delete(conn))

        async with self.store.transaction() as tx:
            tx.at_commit(work)
        return sum(counts)

    async def measure(self) -> None:
        """Refresh the figures metrics show."""
        async with self.store.engine.connect() as conn:
            self.oldest_retained = await retention.oldest_retained(conn)
            self.database_bytes = await retention.database_size(conn)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="retention")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _run(self) -> None:
        while True:
            try:
                if self.is_leader():
                    await self.prune_once()
                await self.measure()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database may be down: the next round tries again
                log.warning("pruning expired jobs failed", error=str(exc))
            await asyncio.sleep(self.settings.interval_seconds)
