"""Keep a :class:`ClusterState` current: load it from the views, then follow the log.

On start the state is rebuilt from the views in one consistent snapshot (never by reading
every job ever submitted), then every event after the snapshot's sequence number is applied
in order. ``catch_up()`` brings the state to the log's head on demand; a background task
keeps standby replicas warm so that one can take over leadership at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, Protocol, TypeVar

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, fleet_views
from armada.eventstore.notify import ChangeNotifier
from armada.eventstore.queue_views import queue_specs
from armada.eventstore.snapshot_views import active_job_pages, active_run_rows, executor_rows, node_specs
from armada.eventstore.unreadable import UnreadableRecords
from armada.model import events as ev
from armada.model.jobs import decode_job
from armada.model.lifecycle import RunState
from armada.model.queues import Queue
from armada.scheduler.cluster_state import ClusterState
from armada.scheduler.store import SchedulerStore
from armada.scheduling import SchedulingConfig

log = structlog.get_logger(__name__)
T = TypeVar("T")

#: Events read and applied per step: this process's own appends are applied from memory,
#: without a pause, so a long catch-up is cut into steps of bounded length.
READ_BATCH = 1000
#: Active jobs read per query when the state is loaded from the views.
LOAD_PAGE = 10_000


class FollowerListener(Protocol):
    """Told of each event of the kinds it names, once the state has applied it."""

    #: The event types it is called for (most of the log is of other kinds: no call at all).
    events: ClassVar[tuple[type[ev.Event], ...]]

    def __call__(self, state: ClusterState, event: ev.Event) -> None: ...


class EventLogFollower:
    """Owns a :class:`ClusterState` and applies the log to it, one reader at a time."""

    def __init__(self, store: SchedulerStore, config: SchedulingConfig) -> None:
        self.store = store
        self.state = ClusterState(config)
        #: Published with the state's sequence number after each batch is applied.
        self.applied = ChangeNotifier()
        #: What :meth:`listen` asked to be told of, by event type.
        self._listeners: dict[type[ev.Event], list[FollowerListener]] = {}
        self._observers: dict[type[ev.Event], Callable[[ev.Event], None]] = {}
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Rebuild the state from the views (a consistent snapshot) and its log position."""
        state = ClusterState(self.state.config)
        async with self.store.engine.connect() as raw:
            conn = raw
            if raw.dialect.name == "postgresql":
                conn = await raw.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                head = await dialects.log_head(conn)
                records = self.store.unreadable
                await _load_queues(conn, state, records)
                await _load_cordons(conn, state)
                await _load_executors(conn, state, records)
                await _load_jobs(conn, state, records)
        state.seq = head
        self.state = state
        self.applied.publish(head)
        log.info("scheduler state loaded", seq=head, jobs=len(state.jobs), executors=len(state.executors))

    async def catch_up(self) -> int:
        """Apply the committed events not yet applied, up to the log's head as this process
        knew it when called (at least one batch); return the state's sequence number.

        Events committed while it runs are left to the next call: under a steady stream of
        appends (run reports while a backlog drains) a catch-up that chased the head would
        hold the lock for as long as the stream kept ahead of it, one loop turn per batch,
        and every caller waiting for the lock (the scheduling cycle among them) with it.
        """
        target = self.store.known_head
        async with self._lock:
            while True:
                batch = await self.store.read(self.state.seq, limit=READ_BATCH)
                self.state.apply_all(batch, observe=self._observers)
                if batch:
                    self.applied.publish(self.state.seq)
                if len(batch) < READ_BATCH or self.state.seq >= target:
                    return self.state.seq
                await asyncio.sleep(0)  # requests (and the append in flight) run between batches

    def listen(self, listener: FollowerListener) -> None:
        """Call ``listener`` after each event of its kinds is applied from the log (not for
        the snapshot :meth:`load` reads)."""
        for kind in listener.events:
            listeners = self._listeners.setdefault(kind, [])
            listeners.append(listener)
            self._observers[kind] = partial(self._tell, listeners)

    def _tell(self, listeners: list[FollowerListener], event: ev.Event) -> None:
        for listener in listeners:
            listener(self.state, event)

    def start(self) -> None:
        """Follow the log in the background (hot standby)."""
        self._task = asyncio.create_task(self._follow(), name="log-follower")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _follow(self) -> None:
        while True:
            try:
                seq = self.state.seq
                await self.store.wait_for_change(seq, timeout=1.0)
                if await self.catch_up() == seq:  # nothing new: has the log gone back?
                    await self._reload_if_log_went_back()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database may be down: keep trying
                log.warning("log follower cannot read the log", error=str(exc))
                await asyncio.sleep(1.0)

    async def _reload_if_log_went_back(self) -> None:
        """A log whose head is behind the state (the database was restored from a backup, or
        failed over to a standby that missed commits) holds none of what the state applied
        past it, and its next events reuse those sequence numbers: load the state afresh."""
        head = await self.store.head()
        if head >= self.state.seq:
            return
        log.error(
            "the event log went back in time (database restored?): reloading the state",
            seq=self.state.seq,
            head=head,
        )
        async with self._lock:
            self.store.rewind(head)
            self.applied.rewind(head)  # long-polling lease calls wait for what comes next
            await self.load()


def _convert(kind: type[T]) -> Callable[[Any], T]:
    return lambda data: msgspec.convert(data, kind)


async def _load_queues(conn: AsyncConnection, state: ClusterState, records: UnreadableRecords) -> None:
    """Queues whose stored spec this version cannot read are left out (and reported)."""
    for row in await queue_specs(conn):
        spec = records.decode(_convert(Queue), row.spec, "queue", row.name)
        if spec is not None:
            state.apply(0, ev.QueueUpdated(queue=row.name, spec=spec))


async def _load_cordons(conn: AsyncConnection, state: ClusterState) -> None:
    """Before the executors, so that their cordoned nodes are loaded unschedulable."""
    found = await fleet_views.cordons(conn)
    state.cordoned_executors = {name: s.reason for name, s in found.executors.items() if s.cordoned}
    state.cordoned_nodes = found.nodes


async def _load_executors(conn: AsyncConnection, state: ClusterState, records: UnreadableRecords) -> None:
    nodes: dict[str, list[ev.ExecutorNode]] = {}
    for row in await node_specs(conn):
        key = f"{row.executor_id}/{row.name}"
        node = records.decode(_convert(ev.ExecutorNode), row.spec, "node", key)
        if node is not None:
            nodes.setdefault(row.executor_id, []).append(node)
    for row in await executor_rows(conn):
        state.apply(
            0,
            ev.ExecutorReported(
                executor_id=row.executor_id,
                pool=row.pool,
                nodes=nodes.get(row.executor_id, []),
                created=row.last_seen,
            ),
        )


async def _load_jobs(conn: AsyncConnection, state: ClusterState, records: UnreadableRecords) -> None:
    """Active jobs, a page at a time and each page in bulk; one whose stored spec cannot be
    read is reported (and so failed), not loaded."""
    async for rows in active_job_pages(conn, LOAD_PAGE):
        events: list[tuple[int, ev.Event]] = []
        for row in rows:
            stored = records.decode(decode_job, row.spec, "job", row.job_id, row.job_id)
            if stored is None:
                continue
            job = msgspec.structs.replace(stored, priority=row.priority)
            envelope: ev.Envelope = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}
            events.append((0, ev.JobSubmitted(job=job, created=row.submitted, **envelope)))
            events.append((0, ev.JobQueued(attempts=row.attempts, **envelope)))
            if row.cancel_requested:
                events.append((0, ev.JobCancelling(**envelope)))
            if row.preempt_requested:
                events.append((0, ev.JobPreempting(**envelope)))
        state.apply_all(events)
    for run in await active_run_rows(conn):
        if run.job_id not in state.extras:  # not loaded (unreadable)
            continue
        run_envelope: ev.Envelope = {
            "queue": run.queue,
            "job_set_id": run.job_set_id,
            "job_id": run.job_id,
            "run_id": run.run_id,
        }
        state.apply(0, ev.JobLeased(cluster_id=run.cluster, node_id=run.node, pool=run.pool, **run_envelope))
        if run.state == RunState.PENDING:
            state.apply(0, ev.JobPending(**run_envelope))
        elif run.state == RunState.RUNNING:
            state.apply(0, ev.JobRunning(**run_envelope))
