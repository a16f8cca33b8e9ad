"""Per-queue figures of each pool's turn in a cycle: what upstream exports as per-cycle gauges.

Counted from the arrays the pool's turn already holds (a bincount per round, one pass over
the evicted rows, one over the leases), so they cost no per-job Python work. Upstream counts
a single job as a gang of one; so do these.
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from armada.scheduling.jobdb import JobDb

IntArray = npt.NDArray[np.int64]


class QueueFigures(msgspec.Struct):
    """One queue's figures in one pool's turn."""

    jobs_considered: int = 0
    gangs_considered: int = 0
    gangs_scheduled: int = 0
    #: Jobs evicted: by fair-share eviction (whether they got their node back or were
    #: preempted) and by urgency preemption.
    evicted_jobs: int = 0
    #: resource name -> units requested by the evicted jobs
    evicted: dict[str, int] = msgspec.field(default_factory=dict)


#: pool -> queue -> figures
PoolFigures = dict[str, dict[str, QueueFigures]]


def _of(figures: PoolFigures, pool: str, queue: str) -> QueueFigures:
    return figures.setdefault(pool, {}).setdefault(queue, QueueFigures())


def count_considered(
    figures: PoolFigures, db: JobDb, pool: str, queues: IntArray, keys: IntArray, counts: IntArray
) -> None:
    """Units of a round that were decided: ``queues`` are database queue indices."""
    if not len(queues):
        return
    gang = db.keys.gangs()[keys]
    size = len(db.queue_names)
    jobs = np.bincount(queues, weights=counts, minlength=size)
    gangs = np.bincount(queues, weights=np.where(gang, 1, counts), minlength=size)
    for queue in np.flatnonzero(jobs).tolist():
        entry = _of(figures, pool, db.queue_names[queue])
        entry.jobs_considered += int(jobs[queue])
        entry.gangs_considered += int(gangs[queue])


def count_evicted(figures: PoolFigures, db: JobDb, pool: str, rows: IntArray) -> None:
    """Running ``rows`` evicted in ``pool``'s turn."""
    queues = db.cols["queue"][rows].astype(np.int64)
    requests = db.keys.requests()[db.cols["key"][rows].astype(np.int64)]
    names = db.resources.names
    for queue in np.unique(queues).tolist():
        entry = _of(figures, pool, db.queue_names[queue])
        mine = queues == queue
        entry.evicted_jobs += int(mine.sum())
        for column in np.flatnonzero(requests[mine].sum(axis=0)).tolist():
            total = int(requests[mine, column].sum())
            entry.evicted[names[column]] = entry.evicted.get(names[column], 0) + total


def count_gangs_scheduled(figures: PoolFigures, db: JobDb, rows: IntArray, pool: str) -> None:
    """Leased ``rows`` of ``pool``: each job outside a gang is one, each gang one."""
    queues = db.cols["queue"][rows].astype(np.int64)
    gangs = db.cols["gang"][rows].astype(np.int64)
    in_gang = gangs >= 0
    scheduled = np.bincount(queues[~in_gang], minlength=len(db.queue_names))
    if in_gang.any():  # one per distinct (queue, gang): a gang's members share its queue
        span = int(gangs.max()) + 1
        pairs = np.unique(queues[in_gang] * span + gangs[in_gang])
        scheduled += np.bincount(pairs // span, minlength=len(db.queue_names))
    for queue in np.flatnonzero(scheduled).tolist():
        _of(figures, pool, db.queue_names[queue]).gangs_scheduled += int(scheduled[queue])
