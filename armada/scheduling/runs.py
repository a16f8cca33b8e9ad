"""Short runs of identical jobs placed one after another, as best fit places each.

Near capacity a pool's turn stops fusing and walks its DRF order run by run: often runs of one
or two jobs, keys alternating, each a best fit over every node (:func:`.placement.place_identical`:
nodes in order of least room in the key's dominant column, then node order, each filled in
turn). By then few nodes have room, and a run changes only the nodes it lands on. So
:func:`place_runs` keeps, for each key, a heap of the nodes with room in best-fit order and
takes each run from it: the same nodes, for a cost per node used instead of per node of the pool.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def place_runs(
    free: IntArray,
    *,
    keys: IntArray,
    bounds: IntArray,
    requests: IntArray,
    masks: Mapping[int, BoolArray],
    dominant: IntArray,
    out_of_time: Callable[[], bool],
) -> IntArray:
    """Nodes for consecutive runs of identical jobs (run ``r``: ``bounds[r + 1] - bounds[r]``
    jobs of key ``keys[r]``; ``masks`` holds the node mask of each of these keys), each run
    placed as :func:`.placement.place_identical` would on what the runs before it left free.
    Stops after the first run that does not fit whole, or once ``out_of_time()``. Returns the
    jobs' nodes, in order.

    Only nodes that could hold the smallest request are looked at: placing only takes space,
    so no other node could hold any of these jobs later.
    """
    distinct = sorted(masks)
    least = requests[distinct].min(axis=0)
    positive = least > 0
    mask = np.logical_or.reduce([masks[key] for key in distinct])
    for column in np.flatnonzero(positive).tolist():
        mask = mask & (free[:, column] >= least[column])
    nodes = np.flatnonzero(mask)
    rows = np.take(free, nodes, axis=0).tolist()  # ``free[nodes]``, several times faster
    room = _Room(rows, {key: masks[key][nodes] for key in distinct}, requests, dominant)
    placed: list[int] = []
    for key, count in zip(keys.tolist(), np.diff(bounds).tolist(), strict=True):
        if out_of_time():
            break
        got = room.take(key, count)
        placed += got
        if len(got) < count:
            break
    return nodes[np.array(placed, dtype=np.int64)]


class _Room:
    """Free space of the candidate nodes (rows of ints) and, per key, a heap of ``(room in the
    key's dominant column, node)``. Room only shrinks: an entry whose room changed since it was
    pushed is stale and skipped, and a node too full for a key leaves that key's heap for good."""

    def __init__(
        self, rows: list[list[int]], masks: dict[int, BoolArray], requests: IntArray, dominant: IntArray
    ) -> None:
        self.rows = rows
        #: key -> (column, units) it requests, dominant column first
        self.needs: dict[int, list[tuple[int, int]]] = {}
        self.dominant: dict[int, int] = {}
        self.heaps: dict[int, list[tuple[int, int]]] = {}
        self.member: dict[int, list[bool]] = {}
        for key, mask in masks.items():
            column = self.dominant[key] = int(dominant[key])
            request = requests[key].tolist()
            self.needs[key] = [(c, units) for c, units in enumerate(request) if units > 0]
            self.member[key] = mask.tolist()
            heap = [(rows[n][column], n) for n in np.flatnonzero(mask).tolist()]
            heapq.heapify(heap)
            self.heaps[key] = heap

    def take(self, key: int, count: int) -> list[int]:
        """Nodes for up to ``count`` jobs of ``key``, best fit, one entry per job."""
        heap, need, column, rows = self.heaps[key], self.needs[key], self.dominant[key], self.rows
        out: list[int] = []
        while count and heap:
            value, node = heap[0]
            row = rows[node]
            fit = min(row[c] // units for c, units in need) if value == row[column] else 0
            if fit <= 0:  # stale, or too full for this key from now on
                heapq.heappop(heap)
                continue
            take = min(fit, count)
            for c, units in need:
                row[c] -= take * units
            out += [node] * take
            count -= take
            for other, other_heap in self.heaps.items():
                shrunk = any(c == self.dominant[other] for c, _ in need)
                if shrunk and self.member[other][node]:
                    heapq.heappush(other_heap, (row[self.dominant[other]], node))
        return out
