"""Urgency preemption: a higher priority class evicts preemptible lower classes.

When a run of jobs does not fit, it may count the resources of running jobs of preemptible
classes with a lower ``priority`` as free. On each node it then lands on, victims are taken
lowest class first, youngest first, until the new job fits; a gang victim takes its whole
gang with it. Non-preemptible jobs are never preempted.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from armada.scheduling.candidates import Units
from armada.scheduling.columns import reduce_columns
from armada.scheduling.eviction import LOST, PENDING, Eviction
from armada.scheduling.jobdb import RUNNING
from armada.scheduling.placement import place_identical
from armada.scheduling.poolstate import PoolState

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Placer(Protocol):
    """How urgency preemption places the units it made room for."""

    def members(self, units: Units, chosen: IntArray) -> IntArray:
        """Job rows of the chosen units, gang members expanded."""
        ...

    def commit(self, units: Units, chosen: IntArray, nodes: IntArray) -> None:
        """Lease the chosen units on local ``nodes``."""
        ...

    def place_uniform(
        self, free: IntArray, key: int, request: IntArray, mask: BoolArray, dominant: int
    ) -> IntArray | None:
        """Nodes for one uniform gang of ``key`` on ``free``, or None."""
        ...


class Urgency:
    """Urgency preemption in one pool's turn: frees room through ``eviction`` and places
    through ``placer`` (the :class:`armada.scheduling.pool.PoolCycle` that owns both)."""

    def __init__(self, state: PoolState, eviction: Eviction, placer: Placer) -> None:
        self.state, self.ctx, self.db = state, state.ctx, state.db
        self.eviction, self.placer = eviction, placer

    def lower_classes(self, priority: int) -> list[int]:
        """Preemptible priority classes a job of ``priority`` may urgency-preempt (none in a pool
        with ``disableUrgencyScheduling``)."""
        if self.state.policy.disable_urgency_scheduling or self.state.away_in is not None:
            return []
        classes = self.ctx.config.priority_classes
        names = self.db.priority_class_names
        return [i for i, n in enumerate(names) if classes[n].preemptible and classes[n].priority < priority]

    def reclaim_first(self) -> bool:
        """Whether away jobs here are preempted before anything else, by any home job."""
        return (
            self.state.away_by_class is not None
            and not self.state.policy.disable_preempt_cross_pool_jobs_first
        )

    def reclaimable(self, lower: list[int]) -> IntArray | None:
        """Resources per node a job that may preempt ``lower`` classes could free (None: nothing)."""
        state = self.state
        free = reduce_columns(np.add, state.running_by_class[:, lower]) if lower else None
        if self.reclaim_first():
            assert state.away_by_class is not None
            others = [c for c in range(state.away_by_class.shape[1]) if c not in lower]
            away = state.away_by_class[:, others].sum(axis=1)
            free = away if free is None else free + away
        return free if free is not None and free.any() else None

    def urgent(self, units: Units, i: int, j: int) -> int:
        """Place units ``i..j`` (one key) by preempting lower classes (and reclaiming away
        capacity); returns how many fitted."""
        key = int(units.keys[i])
        info = self.db.keys.infos[key]
        lower = self.lower_classes(info.priority)
        if self.reclaimable(lower) is None:
            return 0
        request, size = self.state.key_requests[key], int(self.state.cardinality[key])
        dominant = int(self.state.key_dominant[key])
        placed = 0
        for u in range(i, j):
            reclaimable = self.reclaimable(lower)
            if reclaimable is None:
                break
            boosted = self.state.free - self.eviction.held + reclaimable
            if self.state.uniform[key]:
                nodes = self.placer.place_uniform(boosted, key, request, self.state.mask(key), dominant)
                if nodes is None:
                    break
            else:
                nodes = place_identical(boosted, request, self.state.mask(key), size, dominant).nodes
                if len(nodes) < size:
                    break
            rows = self.placer.members(units, np.array([u]))
            for node in np.unique(nodes).tolist():
                need = int((nodes == node).sum()) * request + self.eviction.held[node]
                self._evict_for(node, need, info.priority, int(rows[int(np.argmax(nodes == node))]))
            self.placer.commit(units, np.array([u]), nodes)
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
        """Preempt lower-class jobs on ``node`` until ``need`` is free there."""
        db = self.db
        classes = self.ctx.config.priority_classes
        evicted = (
            self.eviction.ev_state if len(self.eviction.ev_state) else np.zeros(len(db.ids), dtype=np.int8)
        )
        home = db.pool_names.index(self.state.pool) if self.state.pool in db.pool_names else -2
        tracks_away, first = self.state.away_by_class is not None, self.reclaim_first()
        victims = []
        for row in db.jobs_on_node(int(self.state.node_rows[node])):
            if self.ctx.taken[row] or evicted[row] in (PENDING, LOST):  # not on the node now
                continue
            pc = classes[db.keys.infos[int(db.cols["key"][row])].priority_class]
            away = tracks_away and int(db.cols["pool"][row]) != home
            if (away and first) or (pc.preemptible and pc.priority < priority):
                victims.append((not (away and first), pc.priority, -int(db.cols["run_seq"][row]), row, away))
        for _, _, _, row, away in sorted(victims):
            if (self.state.free[node] >= need).all():
                break
            if self.ctx.taken[row]:
                continue
            rows = np.array(self._running_group(row), dtype=np.int64)
            rows = rows[self.state.local_node[db.cols["node"][rows]] >= 0]
            if away:
                self._reclaim(rows)
                reason = f"pool {self.state.pool}: away capacity reclaimed by job {db.ids[by]}"
            else:
                self.eviction.take_off(rows, +1)
                reason = f"preempted by higher-priority job {db.ids[by]} in pool {self.state.pool}"
            self.eviction.preempt(rows, np.full(len(rows), by), reason, "urgency")

    def _reclaim(self, rows: IntArray) -> None:
        """Give the resources of away jobs ``rows`` back to the pool (they hold no share of it)."""
        state, cols = self.state, self.db.cols
        assert state.away_by_class is not None
        keys = cols["key"][rows].astype(np.int64)
        local, classes = state.local_node[cols["node"][rows]], state.key_class[keys]
        requests = state.key_requests[keys]
        np.add.at(state.free, local, requests)
        np.subtract.at(state.running_by_class, (local, classes), requests)
        np.subtract.at(state.away_by_class, (local, classes), requests)
