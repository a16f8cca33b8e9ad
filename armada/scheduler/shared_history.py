"""The leader's cycle history, shared through the database so that any replica reports it.

A :class:`CycleRecord` names scheduling keys by the index this process's key table gave
them; another replica interned the same keys in another order. What is stored names each
key by what it is (:func:`key_identity`), and a reader maps that back onto its own table
(it follows the same log, so it knows the same keys). Only PostgreSQL needs this: an SQLite
database belongs to one process, which always leads.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable
from datetime import datetime

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore.shared_reports import load_report, save_report
from armada.scheduler.history import CYCLES_KEPT, CycleHistory, CycleRecord, JobCounts
from armada.scheduling import CycleStats, JobDb, QueueShare, Reasons
from armada.scheduling.keys import KeyInfo

log = structlog.get_logger(__name__)

#: The row the history is stored under.
NAME = "cycles"
#: Least seconds between two writes: a busy leader cycles many times a second.
WRITE_INTERVAL = 0.5


class StoredCycle(msgspec.Struct, frozen=True, kw_only=True):
    """A :class:`CycleRecord` with its keys named by :func:`key_identity`."""

    finished: datetime
    stats: CycleStats
    shares: dict[str, dict[str, QueueShare]]
    by_queue_key: dict[str, dict[str, str]]
    by_key: dict[str, str]
    by_queue: dict[str, str]
    cycle: str
    lookback: int
    queue_summary: dict[str, dict[str, int]]
    scheduled: list[tuple[str, str, str, str, int]]
    preempted: list[tuple[str, str, str, str, int]]
    repeats: int


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(list[StoredCycle]).decode


def key_identity(info: KeyInfo) -> str:
    """What a scheduling key is, the same in every process."""
    parts = (
        sorted(info.requests.items()),
        info.priority_class,
        info.node_selector,
        info.tolerations,
        info.affinity,
        sorted(info.pools),
        info.gang_cardinality,
        info.uniformity_label,
    )
    return _encode(parts).decode()


def _stored(record: CycleRecord, infos: list[KeyInfo]) -> StoredCycle:
    reasons = record.reasons
    return StoredCycle(
        finished=record.finished,
        stats=record.stats,
        shares=record.shares,
        by_queue_key={
            queue: {key_identity(infos[key]): why for key, why in keys.items()}
            for queue, keys in reasons.by_queue_key.items()
        },
        by_key={key_identity(infos[key]): why for key, why in reasons.by_key.items()},
        by_queue=reasons.by_queue,
        cycle=reasons.cycle,
        lookback=reasons.lookback,
        queue_summary=record.queue_summary,
        scheduled=[(*name, n) for name, n in record.scheduled.items()],
        preempted=[(*name, n) for name, n in record.preempted.items()],
        repeats=record.repeats,
    )


def _record(stored: StoredCycle, keys: dict[str, int]) -> CycleRecord:
    """The record with this process's key indices (keys it never saw are left out)."""
    reasons = Reasons(
        by_queue_key={
            queue: {keys[k]: why for k, why in by_key.items() if k in keys}
            for queue, by_key in stored.by_queue_key.items()
        },
        by_key={keys[k]: why for k, why in stored.by_key.items() if k in keys},
        by_queue=stored.by_queue,
        cycle=stored.cycle,
        lookback=stored.lookback,
    )

    def counts(rows: list[tuple[str, str, str, str, int]]) -> JobCounts:
        return Counter({(queue, pool, pc, kind): n for queue, pool, pc, kind, n in rows})

    return CycleRecord(
        finished=stored.finished,
        stats=stored.stats,
        shares=stored.shares,
        reasons=reasons,
        queue_summary=stored.queue_summary,
        scheduled=counts(stored.scheduled),
        preempted=counts(stored.preempted),
        repeats=stored.repeats,
    )


async def shared_history(engine: AsyncEngine, db: JobDb) -> CycleHistory:
    """The leader's history as last stored, in terms of ``db``'s keys (empty if none is)."""
    body = await load_report(engine, NAME)
    if body is None:
        return CycleHistory()
    try:
        stored = _decode(body)
    except msgspec.DecodeError:  # written by another version: as if none were stored
        log.warning("stored scheduling history unreadable; ignored")
        return CycleHistory()
    keys = {key_identity(info): info.index for info in db.keys.infos}
    return CycleHistory.of(_record(cycle, keys) for cycle in stored)


class HistoryPublisher:
    """Listens to the leader's :class:`CycleHistory` and stores a copy, one write at a time.

    Records are converted as they are made (their key indices are this moment's); writes
    coalesce, so a busy leader writes at most every :data:`WRITE_INTERVAL` seconds.
    """

    def __init__(self, engine: AsyncEngine, jobs: Callable[[], JobDb]) -> None:
        self._engine = engine
        self._jobs = jobs
        self._cycles: deque[StoredCycle] = deque(maxlen=CYCLES_KEPT)
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def recorded(self, record: CycleRecord) -> None:
        """A :data:`~armada.scheduler.history.CycleListener`: keep ``record`` and schedule a write."""
        if record.repeats > 1 and self._cycles:
            self._cycles.pop()  # the history folded it into the idle entry before
        self._cycles.append(_stored(record, self._jobs().keys.infos))
        self._dirty.set()
        if self._task is None:
            self._task = asyncio.create_task(self._write_loop(), name="history-publisher")

    async def _write_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await save_report(self._engine, NAME, _encode(list(self._cycles)))
            except Exception as exc:  # the next cycle tries again; scheduling goes on
                log.warning("storing the scheduling history failed", error=repr(exc))
            await asyncio.sleep(WRITE_INTERVAL)

    async def close(self) -> None:
        """Stop writing (what was written stays for the next leader's readers)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
