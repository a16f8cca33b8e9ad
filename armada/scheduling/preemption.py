"""Preemption: fair-share eviction with same-cycle return, and urgency preemption.

*Fair share*: preemptible jobs of queues holding more than ``protectedFractionOfFairShare``
times their demand-adjusted fair share are evicted at the start of a pool's cycle and put
back into their queue's DRF order, pinned to their own node. Only those whose place was
taken by then are preempted, each naming the new job that took its node.

*Urgency*: a run that does not fit may count the resources of running preemptible jobs of
lower priority classes as free; victims on the chosen nodes are taken lowest class first,
youngest first, until the new job fits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import numpy.typing as npt

from armada.scheduling.candidates import Units, empty_units
from armada.scheduling.context import CycleContext
from armada.scheduling.decisions import Preemption
from armada.scheduling.fairshare import dominant_shares
from armada.scheduling.jobdb import RUNNING
from armada.scheduling.placement import dominant_column, place_identical
from armada.scheduling.poolstate import PoolState
from armada.scheduling.queues import QueueSpec
from armada.scheduling.state import UsageHistory

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Evictions(PoolState, ABC):
    """Preemption half of :class:`armada.scheduling.pool.PoolCycle`."""

    @abstractmethod
    def members(self, units: Units, chosen: IntArray) -> IntArray:
        """Job rows of the chosen units, gang members expanded."""

    @abstractmethod
    def commit(self, units: Units, chosen: IntArray, nodes: IntArray) -> None:
        """Lease the chosen units on local ``nodes``."""

    @abstractmethod
    def place_uniform(
        self, free: IntArray, key: int, request: IntArray, mask: BoolArray, dominant: int
    ) -> IntArray | None:
        """Nodes for one uniform gang of ``key`` on ``free``, or None."""

    def __init__(
        self, ctx: CycleContext, pool: str, node_rows: IntArray, queues: list[QueueSpec], usage: UsageHistory
    ) -> None:
        super().__init__(ctx, pool, node_rows, queues, usage)
        classes = self.ctx.config.priority_classes
        self.preemptible_classes = [
            i for i, n in enumerate(self.db.priority_class_names) if classes[n].preemptible
        ]
        self._evicted: list[Units] = [empty_units() for _ in self.queues]
        self._next = np.zeros(len(self.queues), dtype=np.int64)
        self._members: dict[int, tuple[IntArray, IntArray]] = {}
        self._returned: set[int] = set()
        self._is_evicted = np.zeros(0, dtype=bool)

    # -- fair share ----------------------------------------------------------------------

    def evict_for_fair_share(self) -> None:
        config = self.ctx.config
        preemptible_classes = self.preemptible_classes
        if not config.enable_fair_share_preemption or not preemptible_classes:
            return
        if not self.alloc_by_class[:, preemptible_classes].any():
            return
        actual = dominant_shares(self.alloc, self.scale)
        over = np.flatnonzero(actual > config.protected_fraction_of_fair_share * self.adjusted + 1e-12)
        preemptible = np.isin(self.key_class, preemptible_classes)
        self._is_evicted = np.zeros(len(self.db.ids), dtype=bool)
        for qi in over.tolist():
            rows = self.db.running_rows(int(self._db_queue(qi)), self.pool)
            keys = self.db.cols["key"][rows]
            local = self.local_node[self.db.cols["node"][rows]]
            keep = preemptible[keys] & (local >= 0) & ~self.ctx.taken[rows]
            rows, keys, local = rows[keep], keys[keep].astype(np.int64), local[keep]
            if not len(rows):
                continue
            order = np.argsort(self.db.cols["run_seq"][rows], kind="stable")
            rows, keys, local = rows[order], keys[order], local[order]
            self._take_off(rows, keys, local, np.full(len(rows), qi), +1)
            self._is_evicted[rows] = True
            self._evicted[qi] = self._group(rows, keys, local, qi)

    def _db_queue(self, qi: int) -> int:
        return self.db.queue_index(self.queues[qi].name)

    def _group(self, rows: IntArray, keys: IntArray, local: IntArray, qi: int) -> Units:
        """One unit per evicted job, or per evicted gang (represented by its oldest member)."""
        gangs = self.db.cols["gang"][rows]
        reps: list[int] = []
        by_gang: dict[int, list[int]] = {}
        for index, gang in enumerate(gangs.tolist()):
            if gang < 0:
                reps.append(index)
            elif gang in by_gang:
                by_gang[gang].append(index)
            else:
                by_gang[gang] = [index]
                reps.append(index)
        for index in reps:
            gang = int(gangs[index])
            members = np.array(by_gang[gang]) if gang >= 0 else np.array([index])
            self._members[int(rows[index])] = (rows[members], local[members])
        chosen = np.array(reps, dtype=np.int64)
        counts = np.array([len(self._members[int(rows[i])][0]) for i in reps], dtype=np.int64)
        n = len(chosen)
        return Units(
            rows[chosen],
            keys[chosen],
            counts,
            np.ones(n, dtype=bool),
            np.full(n, -1),
            np.full(n, qi),
            np.zeros(n),
        )

    def _take_off(self, rows: IntArray, keys: IntArray, local: IntArray, qi: IntArray, sign: int) -> None:
        """Remove (``sign=+1``) or restore (``-1``) running jobs' resources from their nodes."""
        requests = self.key_requests[keys] * sign
        classes = self.key_class[keys]
        np.add.at(self.free, local, requests)
        np.subtract.at(self.running_by_class, (local, classes), requests)
        np.subtract.at(self.alloc, qi, requests)
        np.subtract.at(self.alloc_by_class, (qi, classes), requests)

    def pending_evicted(self, qi: int) -> Units:
        return self._evicted[qi].take(slice(int(self._next[qi]), None))

    def consume_evicted(self, queues: IntArray) -> None:
        self._next += np.bincount(queues, minlength=len(self._next))

    def evicted_fit(self, trial: IntArray, reps: IntArray) -> bool:
        """Whether these evicted units all fit back on their nodes; if so ``trial`` is charged."""
        members = [self._members[int(r)] for r in reps.tolist()]
        rows = np.concatenate([m[0] for m in members])
        local = np.concatenate([m[1] for m in members])
        need = np.zeros_like(trial)
        np.add.at(need, local, self.key_requests[self.db.cols["key"][rows]])
        if ((trial - need < 0) & (need > 0)).any():
            return False
        trial -= need
        return True

    def return_evicted(self, rep: int) -> bool:
        """Put an evicted unit back on its nodes if they still have room."""
        if rep in self._returned or self.ctx.taken[rep]:
            return rep in self._returned
        rows, local = self._members[rep]
        if not self.evicted_fit(self.free.copy(), np.array([rep])):
            return False
        keys = self.db.cols["key"][rows].astype(np.int64)
        qi = self.local_queue[int(self.db.cols["queue"][rep])]
        self._take_off(rows, keys, local, np.full(len(rows), qi), -1)
        self._is_evicted[rows] = False
        self._returned.add(rep)
        return True

    def finish_evictions(self) -> None:
        """Evicted units that did not get their place back are preempted."""
        for qi, units in enumerate(self._evicted):
            for rep in units.rows.tolist():
                if self.return_evicted(rep):
                    continue
                rows, local = self._members[rep]
                by = next(
                    (
                        int(self.first_new_on_node[n])
                        for n in local.tolist()
                        if self.first_new_on_node[n] >= 0
                    ),
                    -1,
                )
                name = self.queues[qi].name
                reason = (
                    f"preempted to restore fair share in pool {self.pool}: queue {name} was above "
                    f"{self.ctx.config.protected_fraction_of_fair_share:g}x its fair share"
                )
                self._preempt(rows, local, by, reason)

    def _preempt(self, rows: IntArray, local: IntArray, by: int, reason: str) -> None:
        ids = self.db.ids
        by_id = (ids[by] or "") if by >= 0 else ""
        for row, node in zip(rows.tolist(), local.tolist(), strict=True):
            self.ctx.taken[row] = True
            self.ctx.preemptions.append(
                Preemption(
                    ids[row] or "", by_id, reason, self.pool, self.db.nodes.ids[int(self.node_rows[node])]
                )
            )

    # -- urgency -------------------------------------------------------------------------

    def lower_classes(self, priority: int) -> list[int]:
        """Preemptible priority classes a job of ``priority`` may urgency-preempt."""
        classes = self.ctx.config.priority_classes
        names = self.db.priority_class_names
        return [
            i
            for i, name in enumerate(names)
            if classes[name].preemptible and classes[name].priority < priority
        ]

    def evicted_any(self) -> bool:
        return any(len(units) for units in self._evicted)

    def urgent(self, units: Units, i: int, j: int) -> int:
        """Place units ``i..j`` (one key) by preempting lower classes; returns how many fitted."""
        key = int(units.keys[i])
        info = self.db.keys.infos[key]
        lower = self.lower_classes(info.priority)
        if not lower or not self.running_by_class[:, lower].any():
            return 0
        request, size = self.key_requests[key], int(self.cardinality[key])
        dominant = dominant_column(request, self.scale)
        placed = 0
        for u in range(i, j):
            boosted = self.free + self.running_by_class[:, lower].sum(axis=1)
            if self.uniform[key]:
                nodes = self.place_uniform(boosted, key, request, self.mask(key), dominant)
                if nodes is None:
                    break
            else:
                nodes = place_identical(boosted, request, self.mask(key), size, dominant).nodes
                if len(nodes) < size:
                    break
            rows = self.members(units, np.array([u]))
            for node in np.unique(nodes).tolist():
                need = int((nodes == node).sum()) * request
                self._evict_for(node, need, info.priority, int(rows[int(np.argmax(nodes == node))]))
            self.commit(units, np.array([u]), nodes)
            placed += 1
        return placed

    def _running_group(self, row: int) -> list[int]:
        """The job, or all running members of its gang (gangs are preempted together)."""
        gang = self.db.gang_of(row)
        info = self.db.gangs[gang] if gang >= 0 else None
        if info is None:
            return [row]
        return [m for m in info.members if self.db.cols["state"][m] == RUNNING and not self.ctx.taken[m]]

    def _evict_for(self, node: int, need: IntArray, priority: int, by: int) -> None:
        db = self.db
        classes = self.ctx.config.priority_classes
        victims = []
        for row in db.jobs_on_node(int(self.node_rows[node])):
            if self.ctx.taken[row] or (len(self._is_evicted) and self._is_evicted[row]):
                continue
            info = db.keys.infos[int(db.cols["key"][row])]
            pc = classes[info.priority_class]
            if pc.preemptible and pc.priority < priority:
                victims.append((pc.priority, -int(db.cols["run_seq"][row]), row))
        for _, _, row in sorted(victims):
            if (self.free[node] >= need).all():
                break
            if self.ctx.taken[row]:
                continue
            rows = np.array(self._running_group(row), dtype=np.int64)
            local = self.local_node[db.cols["node"][rows]]
            rows, local = rows[local >= 0], local[local >= 0]
            keys = db.cols["key"][rows].astype(np.int64)
            queues = np.array(
                [self.local_queue[int(q)] for q in db.cols["queue"][rows].tolist()], dtype=np.int64
            )
            self._take_off(rows, keys, local, queues, +1)
            self._preempt(
                rows, local, by, f"preempted by higher-priority job {db.ids[by]} in pool {self.pool}"
            )
