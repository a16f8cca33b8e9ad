"""The last few scheduling cycles, remembered for reports and metrics.

A cycle's :class:`~armada.scheduling.SchedulingResult` holds per-job decisions (leases can
number hundreds of thousands); a :class:`CycleRecord` keeps only what reports need, whose
size depends on the number of queues, pools and scheduling keys, never on queued jobs. A
job's own reason is derived later from its key's reason (``Reasons.for_job``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from armada.scheduling import CycleStats, JobDb, QueueShare, Reasons, SchedulingResult
from armada.scheduling.figures import PoolFigures
from armada.scheduling.unique_rows import unique_rows

#: Cycles kept by default: enough to see a trend, small whatever the load.
CYCLES_KEPT = 20

#: (queue, pool, priority class, upstream's scheduling or preemption type) -> jobs
JobCounts = Counter[tuple[str, str, str, str]]

#: Upstream's scheduling type of a lease that needed no preemption.
NO_PREEMPTION = "no-preemption"


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """What one cycle decided and why the rest waits, without per-job data."""

    finished: datetime
    stats: CycleStats
    #: pool -> queue -> share report
    shares: dict[str, dict[str, QueueShare]]
    reasons: Reasons
    #: queue -> reason -> queued jobs left waiting for it
    queue_summary: dict[str, dict[str, int]]
    scheduled: JobCounts
    preempted: JobCounts
    #: pool -> queue -> upstream's per-cycle figures (the leader's own cycles only: not shared)
    figures: PoolFigures = dataclasses.field(default_factory=dict)
    #: seconds each pool's turn took
    pool_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Consecutive idle cycles (nothing decided) this record stands for; it is the latest of them.
    repeats: int = 1

    @property
    def idle(self) -> bool:
        return not (self.stats.scheduled or self.stats.preempted or self.stats.rejected)

    def top_reasons(self, limit: int = 10) -> list[tuple[str, int]]:
        """The reasons most queued jobs wait for, over every queue."""
        total: Counter[str] = Counter()
        for reasons in self.queue_summary.values():
            total.update(reasons)
        return total.most_common(limit)


CycleListener = Callable[[CycleRecord], None]


class CycleHistory:
    """A bounded history of cycles, newest last; listeners see each cycle as it is recorded.

    Consecutive idle cycles share one entry, so the cycles that decided something stay in view.
    """

    def __init__(self, size: int = CYCLES_KEPT) -> None:
        self._cycles: deque[CycleRecord] = deque(maxlen=size)
        self.listeners: list[CycleListener] = []

    @classmethod
    def of(cls, records: Iterable[CycleRecord]) -> CycleHistory:
        """A history holding ``records`` (oldest first), e.g. the leader's as stored."""
        history = cls()
        history._cycles.extend(records)
        return history

    def __iter__(self) -> Iterator[CycleRecord]:
        return iter(self._cycles)

    def __len__(self) -> int:
        return len(self._cycles)

    @property
    def last(self) -> CycleRecord | None:
        return self._cycles[-1] if self._cycles else None

    def record(self, result: SchedulingResult, db: JobDb, finished: datetime | None = None) -> CycleRecord:
        """Remember ``result``; call before its decisions are applied to ``db``."""
        record = CycleRecord(
            finished=finished or datetime.now(UTC),
            stats=result.stats,
            shares=result.shares,
            reasons=result.reasons,
            queue_summary=result.queue_summary,
            scheduled=_job_counts(db, result.leases.job_ids, result.leases.pools, _lease_types(result)),
            preempted=_job_counts(
                db,
                [p.job_id for p in result.preemptions],
                [p.pool for p in result.preemptions],
                [p.kind for p in result.preemptions],
            ),
            figures=result.figures,
            pool_seconds=result.pool_seconds,
        )
        if record.idle and self._cycles and self._cycles[-1].idle:
            record = dataclasses.replace(record, repeats=self._cycles.pop().repeats + 1)
        self._cycles.append(record)
        for listener in self.listeners:
            listener(record)
        return record


def _lease_types(result: SchedulingResult) -> list[str]:
    """Upstream's scheduling type of each lease: the type of the preemption that made room for
    it (``urgency``, ``fairshare``), else ``no-preemption``."""
    made_room = {p.preempted_by: p.kind for p in result.preemptions if p.preempted_by}
    if not made_room:
        return [NO_PREEMPTION] * len(result.leases)
    return [made_room.get(job_id, NO_PREEMPTION) for job_id in result.leases.job_ids]


def _job_counts(db: JobDb, job_ids: Iterable[str], pools: Iterable[str], types: Iterable[str]) -> JobCounts:
    """Jobs counted by (queue, pool, priority class, type), grouped with numpy rather than per job."""
    pool_list = list(pools)
    rows = np.fromiter((db.row(job_id) for job_id in job_ids), dtype=np.int64, count=len(pool_list))
    counts: JobCounts = Counter()
    if not len(rows):
        return counts
    pool_names, pool_codes = np.unique(np.array(pool_list), return_inverse=True)
    type_names, type_codes = np.unique(np.array(list(types)), return_inverse=True)
    queues = db.cols["queue"][rows].astype(np.int64)
    keys = db.cols["key"][rows].astype(np.int64)
    columns = [queues, pool_codes.astype(np.int64), keys, type_codes.astype(np.int64)]
    groups, _, sizes = unique_rows(np.stack(columns, axis=1))
    for (queue, pool, key, kind), size in zip(groups.tolist(), sizes.tolist(), strict=True):
        priority_class = db.keys.infos[key].priority_class
        counts[(db.queue_names[queue], str(pool_names[pool]), priority_class, str(type_names[kind]))] += size
    return counts
