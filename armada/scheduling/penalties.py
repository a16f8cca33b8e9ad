"""Short-job penalties (a pool's ``shortJobPenaltyCutoff``).

A job that finished less than the cutoff after it started running is charged to its queue,
in fair share, as if it had run until ``start + cutoff``: it keeps counting in the queue's
allocation of the pool (never on a node) until then. Jobs that were preempted are not
charged. This stops a queue from reaching its fair share at once with work it throws away.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


class ShortJobPenalties:
    """Charged allocations by (queue index, pool), each held until a time."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, str], list[tuple[float, IntArray]]] = {}

    def charge(self, queue: int, pool: str, request: IntArray, until: float) -> None:
        self._held.setdefault((queue, pool), []).append((until, request.copy()))

    def allocation(self, queue: int, pool: str, now: float, width: int) -> IntArray:
        """What ``queue`` is still charged in ``pool`` at ``now`` (expired charges are dropped)."""
        total = np.zeros(width, dtype=np.int64)
        held = self._held.get((queue, pool))
        if not held:
            return total
        held[:] = [(until, request) for until, request in held if until > now]
        for _, request in held:
            total[: len(request)] += request[:width]
        return total

    def copy(self) -> ShortJobPenalties:
        clone = ShortJobPenalties()
        clone._held = {key: list(held) for key, held in self._held.items()}
        return clone
