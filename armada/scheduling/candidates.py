"""Candidate units of one round: which queued (or evicted) jobs come next, in DRF order.

A *unit* is one job, or one whole gang represented by its first member in queue order.
Each queue contributes a prefix of its order; the cost a queue would have after taking each
of its units is a cumulative sum, and because those costs only grow, sorting all units by
``(cost after, queue, position)`` is exactly the "always serve the cheapest queue" loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from armada.scheduling.columns import reduce_columns
from armada.scheduling.jobdb import JobDb

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass
class Units:
    """Parallel arrays, one entry per unit."""

    rows: IntArray
    keys: IntArray
    counts: IntArray
    evicted: BoolArray
    #: raw position in the queue's order (-1 for evicted units), to advance the cursor
    pos: IntArray
    queue: IntArray
    cost: FloatArray

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, index: IntArray | slice) -> Units:
        return Units(
            self.rows[index],
            self.keys[index],
            self.counts[index],
            self.evicted[index],
            self.pos[index],
            self.queue[index],
            self.cost[index],
        )

    @staticmethod
    def concat(parts: list[Units]) -> Units:
        parts = [part for part in parts if len(part)]
        if len(parts) < 2:
            return parts[0] if parts else empty_units()
        return Units(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))


_FIELDS = ("rows", "keys", "counts", "evicted", "pos", "queue", "cost")


def empty_units() -> Units:
    i = np.zeros(0, dtype=np.int64)
    return Units(i, i, i, np.zeros(0, dtype=bool), i, i, np.zeros(0))


def scan_queued(
    db: JobDb,
    *,
    order: IntArray,
    start: int,
    stop: int,
    want: int,
    key_ok: BoolArray,
    taken: BoolArray,
    cardinality: IntArray,
    gang_rep: IntArray,
) -> tuple[IntArray, IntArray]:
    """Next schedulable units of one queue's ``order[start:stop]``: (rows, positions).

    Rows of keys not in ``key_ok`` or already ``taken`` are skipped; gang members other than the gang's
    representative are skipped, as are gangs not yet complete. Collects about ``want`` jobs.
    """
    keys_col, gang_col = db.cols["key"], db.cols["gang"]
    found_rows: list[IntArray] = []
    found_pos: list[IntArray] = []
    collected = 0
    p = start
    while p < stop and collected < want:
        end = min(stop, p + max(2 * (want - collected), 1024))
        seg = order[p:end]
        ok = key_ok[keys_col[seg]] & ~taken[seg]
        gangs = gang_col[seg]
        in_gang = np.flatnonzero(gangs >= 0)
        if len(in_gang):
            g = gangs[in_gang]
            complete = db.gang_queued[g] >= cardinality[keys_col[seg[in_gang]].astype(np.int64)]
            complete &= ~db.gang_mixed[g]
            unclaimed = gang_rep[g] < 0
            _, first = np.unique(g, return_index=True)
            is_first = np.zeros(len(g), dtype=bool)
            is_first[first] = True
            claim = unclaimed & is_first
            gang_rep[g[claim]] = seg[in_gang[claim]]
            ok[in_gang] &= complete & (gang_rep[g] == seg[in_gang])
        hits = np.flatnonzero(ok)
        found_rows.append(seg[hits])
        found_pos.append(hits + p)
        collected += len(hits)
        p = end
    if not found_rows:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    return np.concatenate(found_rows), np.concatenate(found_pos)


def queue_costs(
    requests: npt.NDArray[np.int64],
    queue: IntArray,
    allocated: npt.NDArray[np.int64],
    scale: FloatArray,
    usage: FloatArray,
    weight: FloatArray,
) -> FloatArray:
    """Cost of each unit's queue after taking it and the units before it of that queue
    (``requests`` is units x R; the units of a queue are consecutive; ``allocated``, ``usage``
    and ``weight`` are per queue). All queues at once: a cumulative sum over every unit, less
    what the queues before took."""
    if not len(requests):
        return np.zeros(0)
    if not len(scale):
        return (usage / weight)[queue]
    starts = np.flatnonzero(np.concatenate([[True], queue[1:] != queue[:-1]]))
    lengths = np.diff(np.append(starts, len(queue)))
    shares: FloatArray | None = None
    for column in range(requests.shape[1]):  # column by column: a short axis 1 is slow
        cumulative = np.cumsum(requests[:, column])
        before = np.zeros(len(starts), dtype=np.int64)
        before[1:] = cumulative[starts[1:] - 1]
        # Each queue's own cumulative sum plus its allocation (exact: integers).
        cumulative += np.repeat(allocated[queue[starts], column] - before, lengths)
        scaled = cumulative * scale[column]
        shares = scaled if shares is None else np.maximum(shares, scaled, out=shares)
    assert shares is not None  # ``scale`` has a column per resource, and there is one
    return (shares + usage[queue]) / weight[queue]


def merge_order(units: Units) -> IntArray:
    """Global DRF order: cheapest queue first; ties by queue, then position in the queue.

    ``units`` come queue after queue, each queue's in order: a stable sort by cost alone
    keeps ties in that order (a third of the time of sorting by all three)."""
    order: IntArray = np.argsort(units.cost, kind="stable")
    return order


def first_violation(cumulative: npt.NDArray[np.int64], limit: npt.NDArray[np.int64]) -> int:
    """Index of the first row of ``cumulative`` exceeding ``limit`` anywhere (len if none)."""
    over = np.flatnonzero(reduce_columns(np.logical_or, cumulative > limit))
    return int(over[0]) if len(over) else len(cumulative)
