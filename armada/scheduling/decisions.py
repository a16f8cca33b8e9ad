"""What a cycle decided, and why the rest did not happen.

Leases are columnar (a cycle may lease hundreds of thousands of jobs); everything else is
small. Unschedulable reasons are kept per (queue, scheduling key), per queue and per cycle
rather than per job, so a million waiting jobs cost a few dict entries; :meth:`Reasons.for_job`
resolves one job's reason from the job database.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np

from armada.scheduling.figures import PoolFigures
from armada.scheduling.jobdb import JobDb
from armada.scheduling.shares import QueueShare
from armada.scheduling.state import SchedulerState

#: Waiting reasons that name no queue, key or pool (reports and tests compare against them).
QUEUE_CORDONED = "queue is cordoned"
QUEUE_RATE_LIMITED = "queue rate limited (maximumPerQueueSchedulingRate)"
GLOBAL_RATE_LIMITED = "global scheduling rate limit reached (maximumSchedulingRate)"
CYCLE_LEASE_CAP = "cycle's lease cap reached (maxUnacknowledgedLeasesPerExecutor per executor)"
OUT_OF_TIME = "scheduling cycle stopped: maxSchedulingDuration exhausted"
NO_NODES = "no nodes reported by any executor"


class Placement(msgspec.Struct, frozen=True):
    """One job the cycle placed on a node of a pool (the service appends it as ``JobLeased``)."""

    job_id: str
    node_id: str
    pool: str
    executor: str


class Leases(msgspec.Struct):
    """Columnar leases: ``job_ids[i]`` runs on ``node_ids[i]`` in ``pools[i]`` via ``executors[i]``."""

    job_ids: list[str] = msgspec.field(default_factory=list)
    node_ids: list[str] = msgspec.field(default_factory=list)
    pools: list[str] = msgspec.field(default_factory=list)
    executors: list[str] = msgspec.field(default_factory=list)
    #: The same leases as rows: of the jobs in the job db the cycle read, and of their nodes
    #: in its node db (:func:`~.schedule.apply_decisions` and simulations read these).
    rows: list[int] = msgspec.field(default_factory=list)
    nodes: list[int] = msgspec.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.job_ids)

    def __iter__(self) -> Iterator[Placement]:
        for fields in zip(self.job_ids, self.node_ids, self.pools, self.executors, strict=True):
            yield Placement(*fields)


class Preemption(msgspec.Struct, frozen=True):
    """A running job that loses its place; ``preempted_by`` is the job that took it."""

    job_id: str
    preempted_by: str
    reason: str
    pool: str
    node_id: str
    #: Upstream's preemption type: ``fairshare`` or ``urgency``.
    kind: str = "unknown"


class Rejection(msgspec.Struct, frozen=True):
    """A queued job that fits no node shape in the cluster: it should fail as ``Rejected``."""

    job_id: str
    reason: str


class CycleStats(msgspec.Struct, frozen=True, rename="camel"):
    duration: float
    considered: int
    scheduled: int
    preempted: int
    rejected: int
    #: Why the cycle ended early, if it did ("time budget", ...); empty otherwise.
    stopped: str = ""


class Reasons(msgspec.Struct):
    """Why queued jobs were not scheduled, from most to least specific."""

    #: queue -> scheduling key index -> reason (priority-class limit)
    by_queue_key: dict[str, dict[int, str]] = msgspec.field(default_factory=dict)
    #: scheduling key index -> reason shared by every queue (the key fits nowhere)
    by_key: dict[int, str] = msgspec.field(default_factory=dict)
    #: queue -> reason for all its remaining jobs (rate limited, lookback, ...)
    by_queue: dict[str, str] = msgspec.field(default_factory=dict)
    #: reason for everything else (the cycle stopped early)
    cycle: str = "not reached in this cycle"
    #: ``maxQueueLookback`` if some queue was longer than it (jobs past it were not looked at)
    lookback: int = 0

    def for_key(self, queue: str, key: int) -> str:
        return (
            self.by_queue_key.get(queue, {}).get(key)
            or self.by_key.get(key)
            or self.by_queue.get(queue)
            or self.cycle
        )

    def for_job(self, db: JobDb, job_id: str) -> str:
        """The reason for one queued job (gang completeness first, then by key and queue)."""
        row = db.row(job_id)
        gang = db.gang_of(row)
        key = int(db.cols["key"][row])
        cardinality = db.keys.infos[key].gang_cardinality
        if gang >= 0 and db.gang_mixed[gang]:
            return "gang members have different scheduling requirements"
        if gang >= 0 and db.gang_queued[gang] < cardinality:
            return f"gang incomplete {db.gang_queued[gang]}/{cardinality}"
        queue = int(db.cols["queue"][row])
        if self.lookback and int(np.flatnonzero(db.queued_rows(queue) == row)[0]) >= self.lookback:
            return f"beyond maxQueueLookback ({self.lookback})"
        return self.for_key(db.queue_names[queue], key)


class SchedulingResult(msgspec.Struct):
    leases: Leases
    preemptions: list[Preemption]
    rejections: list[Rejection]
    reasons: Reasons
    #: pool -> queue -> share report
    shares: dict[str, dict[str, QueueShare]]
    #: queue -> reason -> number of queued jobs left waiting for it
    queue_summary: dict[str, dict[str, int]]
    #: scheduling key index -> reason -> number of queued jobs (for key-level reports)
    key_summary: dict[int, dict[str, int]]
    stats: CycleStats
    state: SchedulerState
    #: pool -> queue -> upstream's per-cycle figures
    figures: PoolFigures = msgspec.field(default_factory=dict)
    #: seconds each pool's turn took
    pool_seconds: dict[str, float] = msgspec.field(default_factory=dict)
