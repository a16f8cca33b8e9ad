"""One queue's queued jobs in scheduling order, re-sorted only when something changed.

New submissions usually sort after everything already queued (same priority, later
submission), so they are appended without sorting the queue; removals leave stale rows that
are filtered on read and dropped once they make up half the order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class QueueOrder:
    rows: Rows = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pending: list[int] = field(default_factory=list)
    #: set when rows moved (reprioritized, requeued): the next read sorts everything
    dirty: bool = False
    stale: int = 0

    def read(
        self,
        queued: Callable[[Rows], BoolArray],
        argsort: Callable[[Rows], Rows],
        sort_key: Callable[[int], tuple[float, ...]],
    ) -> Rows:
        """Queued rows in order; ``queued`` masks live rows, ``argsort``/``sort_key`` define the order."""
        if self.pending or self.dirty or self.stale > max(64, len(self.rows) // 2):
            pending = np.array(self.pending, dtype=np.int64)
            pending = pending[queued(pending)]
            if self.dirty:
                rows = np.unique(np.concatenate([self.rows, pending]))
                rows = rows[queued(rows)]
                self.rows = rows[argsort(rows)]
            else:
                rows = self.rows[queued(self.rows)] if self.stale else self.rows
                pending = pending[argsort(pending)]
                if len(rows) and len(pending) and sort_key(int(pending[0])) < sort_key(int(rows[-1])):
                    both = np.concatenate([rows, pending])
                    self.rows = both[argsort(both)]
                else:
                    self.rows = np.concatenate([rows, pending])
            self.pending.clear()
            self.dirty = False
            self.stale = 0
        return self.rows[queued(self.rows)] if self.stale else self.rows

    def remap(self, new_row: Rows) -> None:
        """Rewrite rows after the job table was compacted (``new_row[old] = new``, -1 = gone)."""
        rows = new_row[self.rows]
        self.rows = rows[rows >= 0]
        self.pending = [p for p in new_row[np.array(self.pending, dtype=np.int64)].tolist() if p >= 0]
