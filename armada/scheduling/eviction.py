"""Fair-share eviction: evict over-share queues, offer every evicted job its place back.

Preemptible jobs of queues holding more than ``protectedFractionOfFairShare`` times their
demand-adjusted fair share are evicted at the start of a pool's turn and put at the front of
their queue's DRF order, pinned to their own node. While an evicted job is pending, its
resources are *held*: new jobs use free space first and only then take held space, starting
with the nodes whose evicted jobs come last in DRF order (they are the ones that lose under
fair share anyway). An evicted job whose node still has room when its turn comes returns;
the rest are preempted, each naming the first new job leased on its node.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from armada.scheduling.away import away_running
from armada.scheduling.candidates import Units, empty_units
from armada.scheduling.columns import reduce_columns
from armada.scheduling.decisions import Preemption
from armada.scheduling.fairshare import dominant_shares
from armada.scheduling.figures import count_evicted
from armada.scheduling.jobdb import RUNNING
from armada.scheduling.poolstate import PoolState

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NOT_EVICTED, PENDING, RETURNED, LOST = 0, 1, 2, 3


class Eviction:
    """Fair-share eviction of one pool's turn (see the module docstring), over its :class:`PoolState`."""

    def __init__(self, state: PoolState) -> None:
        self.state, self.ctx, self.db = state, state.ctx, state.db
        classes = self.ctx.config.priority_classes
        names = self.db.priority_class_names
        self.preemptible_classes = [i for i, n in enumerate(names) if classes[n].preemptible]
        self._evicted: list[Units] = [empty_units() for _ in self.state.queues]
        self._next = np.zeros(len(self.state.queues), dtype=np.int64)
        #: per job row: NOT_EVICTED / PENDING / RETURNED / LOST, and the local node it was on
        self.ev_state = np.zeros(0, dtype=np.int8)
        self.ev_node = np.zeros(0, dtype=np.int64)
        #: per evicted row: the node whose first new job is blamed if it is lost
        self.lost_to = np.zeros(0, dtype=np.int64)
        self._gang_members: dict[int, IntArray] = {}
        #: resources of pending evicted jobs per node
        self.held: IntArray = np.zeros_like(self.state.free)
        self._round_units = empty_units()
        self._claims: IntArray | None = None
        self._claim_at = 0
        #: The pool's ``fairsharePreemptionRateLimit`` tokens: evicted jobs new ones may displace.
        tokens = self.ctx.preemption_tokens.get(state.pool)
        self.claim_budget = math.inf if tokens is None else math.floor(tokens)
        self.claimed_rows = 0
        #: A displacement was refused for want of tokens (the waiting jobs' reason says so).
        self.rate_limited = False

    # -- evicting ------------------------------------------------------------------------

    def evict_for_fair_share(self) -> None:
        config = self.ctx.config
        if not config.enable_fair_share_preemption or not self.preemptible_classes:
            return
        if self.state.policy.disable_fairshare_scheduling or self.state.policy.disable_home_scheduling:
            return
        if self.state.away_in is not None:  # away turns only use idle capacity
            return
        if not self.state.alloc_by_class[:, self.preemptible_classes].any():
            return
        actual = dominant_shares(self.state.alloc, self.state.scale)
        protected = config.protected_fraction(self.state.pool)
        over = np.flatnonzero(actual > protected * self.state.adjusted + 1e-12)
        if not len(over):
            return
        db, n = self.db, len(self.db.ids)
        cols = db.cols
        local = np.full(n, -1, dtype=np.int64)
        running = np.flatnonzero(cols["state"][:n] == RUNNING)
        local[running] = self.state.local_node[cols["node"][running]]
        mask = (local >= 0) & ~self.ctx.taken[:n]
        mask &= np.isin(self.state.key_class[cols["key"][:n]], self.preemptible_classes)
        mask &= np.isin(cols["queue"][:n], self.state.db_queue[over])
        if self.state.away_by_class is not None:  # away jobs are not this pool's to rebalance
            mask[away_running(db, self.state.pool, self.state.local_node)] = False
        rows = np.flatnonzero(mask)
        if not len(rows):
            return
        queues = self.state.queue_of[cols["queue"][rows]]
        order = np.lexsort((cols["run_seq"][rows], queues))
        rows, queues = rows[order], queues[order]
        keys = cols["key"][rows].astype(np.int64)
        self.ev_state = np.zeros(n, dtype=np.int8)
        self.ev_node = np.full(n, -1, dtype=np.int64)
        self.ev_state[rows] = PENDING
        self.ev_node[rows] = local[rows]
        self.lost_to = self.ev_node.copy()
        self.take_off(rows, +1)
        count_evicted(self.ctx.figures, db, self.state.pool, rows)
        np.add.at(self.held, local[rows], self.state.key_requests[keys])
        for qi in np.unique(queues).tolist():
            self._evicted[qi] = self._units(rows[queues == qi], qi)

    def _units(self, rows: IntArray, qi: int) -> Units:
        """One unit per evicted job, or per evicted gang at its oldest member; oldest run first."""
        gangs = self.db.cols["gang"][rows]
        in_gang = gangs >= 0
        _, first, inverse = np.unique(gangs[in_gang], return_index=True, return_inverse=True)
        gang_rows = rows[in_gang]
        reps = np.sort(np.concatenate([np.flatnonzero(~in_gang), np.flatnonzero(in_gang)[first]]))
        counts = np.ones(len(reps), dtype=np.int64)
        if len(gang_rows):
            by_gang = np.argsort(inverse.ravel(), kind="stable")  # members grouped, oldest first
            groups = np.split(gang_rows[by_gang], np.flatnonzero(np.diff(inverse.ravel()[by_gang])) + 1)
            for rep, members in zip(gang_rows[first].tolist(), groups, strict=True):
                self._gang_members[rep] = members
        rep_rows = rows[reps]
        for i, rep in enumerate(rep_rows.tolist()):
            if rep in self._gang_members:
                counts[i] = len(self._gang_members[rep])
        size = len(reps)
        keys = self.db.cols["key"][rep_rows].astype(np.int64)
        return Units(
            rep_rows,
            keys,
            counts,
            np.ones(size, dtype=bool),
            np.full(size, -1),
            np.full(size, qi),
            np.zeros(size),
        )

    def take_off(self, rows: IntArray, sign: int) -> None:
        """Remove (``sign=+1``) or restore (``-1``) running jobs' resources on their nodes."""
        cols = self.db.cols
        keys = cols["key"][rows].astype(np.int64)
        local = self.state.local_node[cols["node"][rows]]
        queues = self.state.queue_of[cols["queue"][rows]]
        requests = self.state.key_requests[keys] * sign
        classes = self.state.key_class[keys]
        np.add.at(self.state.free, local, requests)
        np.subtract.at(self.state.running_by_class, (local, classes), requests)
        np.subtract.at(self.state.alloc, queues, requests)
        np.subtract.at(self.state.alloc_by_class, (queues, classes), requests)

    # -- in the DRF loop -----------------------------------------------------------------

    def evicted_any(self) -> bool:
        return any(len(units) for units in self._evicted)

    def pending_evicted(self, qi: int) -> Units:
        return self._evicted[qi].take(slice(int(self._next[qi]), None))

    def consume_evicted(self, queues: IntArray) -> None:
        self._next += np.bincount(queues, minlength=len(self._next))

    def start_round(self, units: Units) -> None:
        """Remember the round's DRF order of pending evicted units (for :meth:`displace`)."""
        self._round_units = units
        self._claims = None
        self._claim_at = 0

    def _claimable(self) -> IntArray:
        """Evicted units of this round, latest in DRF order first."""
        if self._claims is None:
            units = self._round_units
            self._claims = units.rows[np.flatnonzero(units.evicted)[::-1]]
        return self._claims

    def displace(
        self,
        strict: IntArray,
        request: IntArray,
        mask: BoolArray,
        count: int,
        *,
        size: int = 1,
        protected: frozenset[int] = frozenset(),
    ) -> IntArray:
        """Nodes for up to ``count`` jobs (whole groups of ``size``) on space held by evicted jobs.

        ``strict`` is the free space net of held space. The evicted units that come last in
        DRF order give up their space first, only on nodes where the job can then fit; they
        are lost (preempted when the turn ends). Claims that do not complete a group of
        ``size`` jobs are undone, so nothing is preempted for a job that is not placed.
        ``protected`` units (evicted units placed alongside, earlier in DRF order) are never taken.
        """
        placed: list[int] = []
        claimed: list[IntArray] = []  # rows claimed for the group being placed
        claims = self._claimable()
        while self._claim_at < len(claims) and self.ev_state[claims[self._claim_at]] != PENDING:
            self._claim_at += 1  # settled or claimed units never become pending again
        if size == 1 and not self._gang_members:
            placed = self._displace_alike(request, mask, count, protected)
        for rep in claims[self._claim_at :].tolist():
            if len(placed) >= count:
                break
            if self.ev_state[rep] != PENDING or rep in protected:
                continue
            rows, _ = self._expand(np.array([rep]))
            nodes = self.ev_node[rows]
            if not any(mask[n] and (strict[n] + self.held[n] >= request).all() for n in nodes.tolist()):
                continue
            if self.claimed_rows + len(rows) > self.claim_budget:
                self.rate_limited = True
                break
            self._claim(rows, strict, +1)
            claimed.append(rows)
            for node in dict.fromkeys(nodes.tolist()):
                while len(placed) < count and mask[node] and (strict[node] >= request).all():
                    placed.append(node)
                    strict[node] -= request
                    if len(placed) % size == 0 and claimed:  # a whole group placed: its claims stand
                        self.lost_to[np.concatenate(claimed)] = node
                        claimed = []
        for rows in claimed:
            self._claim(rows, strict, -1)
        return np.array(placed[: len(placed) - len(placed) % size], dtype=np.int64)

    def _displace_alike(
        self, request: IntArray, mask: BoolArray, count: int, protected: frozenset[int]
    ) -> list[int]:
        """Vectorised start of :meth:`displace` for the common case: evicted single jobs with
        exactly the new job's request. Each such claim makes room for exactly one new job
        (there is no free space left, or the job would have been placed on it), so claims
        are taken in order until one differs; the general loop continues from there.
        """
        claims = self._claimable()
        placed: list[int] = []
        start = self._claim_at
        while len(placed) < count and start < len(claims):
            window = claims[start : start + max(2 * (count - len(placed)), 512)]
            nodes = self.ev_node[window]
            usable = (self.ev_state[window] == PENDING) & mask[nodes]
            if protected:
                usable &= ~np.isin(window, list(protected))
            requests = self.state.key_requests[self.db.cols["key"][window].astype(np.int64)]
            alike = (requests == request).all(axis=1)
            differs = np.flatnonzero(usable & ~alike)
            end = int(differs[0]) if len(differs) else len(window)
            chosen = np.flatnonzero(usable[:end] & alike[:end])
            room = self.claim_budget - self.claimed_rows
            if len(chosen) > room and len(placed) + room < count:
                self.rate_limited = True
            chosen = chosen[: int(min(count - len(placed), room))]
            self.claimed_rows += len(chosen)
            rows = window[chosen]
            self.ev_state[rows] = LOST
            np.subtract.at(self.held, nodes[chosen], requests[chosen])
            self.lost_to[rows] = nodes[chosen]
            placed += nodes[chosen].tolist()
            if len(differs) or self.rate_limited:
                break
            start += len(window)
        return placed

    def save_claims(self) -> tuple[IntArray, npt.NDArray[np.int8], IntArray, int, int] | None:
        """Snapshot of the displacement state, to undo a tentative :meth:`displace` (None = no evictions)."""
        if not self.held.any():
            return None
        return self.held.copy(), self.ev_state.copy(), self.lost_to.copy(), self._claim_at, self.claimed_rows

    def restore_claims(self, saved: tuple[IntArray, npt.NDArray[np.int8], IntArray, int, int] | None) -> None:
        if saved is not None:
            self.held, self.ev_state, self.lost_to, self._claim_at, self.claimed_rows = saved

    def _claim(self, rows: IntArray, strict: IntArray, sign: int) -> None:
        """Give up (``+1``) or take back (``-1``) the held space of pending evicted ``rows``."""
        nodes = self.ev_node[rows]
        requests = self.state.key_requests[self.db.cols["key"][rows].astype(np.int64)] * sign
        self.ev_state[rows] = LOST if sign > 0 else PENDING
        self.claimed_rows += sign * len(rows)
        np.subtract.at(self.held, nodes, requests)
        np.add.at(strict, nodes, requests)

    def _expand(self, reps: IntArray) -> tuple[IntArray, IntArray]:
        """Member rows of evicted units and, per row, the index of its unit."""
        if not self._gang_members:
            return reps, np.arange(len(reps))
        parts = [self._gang_members.get(rep, np.array([rep])) for rep in reps.tolist()]
        if not parts:
            return reps, np.arange(len(reps))
        sizes = np.array([len(p) for p in parts])
        return np.concatenate(parts), np.repeat(np.arange(len(reps)), sizes)

    def evicted_need(self, reps: IntArray) -> IntArray:
        """Resources per node the pending evicted units ``reps`` need to come back."""
        rows, _ = self._expand(reps)
        rows = rows[self.ev_state[rows] == PENDING]
        need = np.zeros_like(self.state.free)
        np.add.at(
            need, self.ev_node[rows], self.state.key_requests[self.db.cols["key"][rows].astype(np.int64)]
        )
        return need

    def settle_evicted(self, reps: IntArray) -> None:
        """Decide pending evicted units in order: back on their node if it has room, else lost.

        Jobs are taken per node in order until one does not fit; a gang returns whole or not.
        """
        rows, unit = self._expand(reps)
        pending = self.ev_state[rows] == PENDING
        rows, unit = rows[pending], unit[pending]
        if not len(rows):
            return
        local = self.ev_node[rows]
        requests = self.state.key_requests[self.db.cols["key"][rows].astype(np.int64)]
        np.subtract.at(self.held, local, requests)
        order = np.lexsort((np.arange(len(rows)), local))
        sorted_nodes = local[order]
        cumulative = np.cumsum(requests[order], axis=0)
        starts = np.flatnonzero(np.r_[True, sorted_nodes[1:] != sorted_nodes[:-1]])
        group = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
        before = np.where(group[:, None] > 0, cumulative[np.maximum(group - 1, 0)], 0)
        fits = reduce_columns(np.logical_and, (cumulative - before) <= self.state.free[sorted_nodes])
        failures = np.cumsum(~fits)
        fits &= failures - np.where(group > 0, failures[np.maximum(group - 1, 0)], 0) == 0
        ok = np.empty(len(rows), dtype=bool)
        ok[order] = fits
        if self._gang_members:  # a gang returns only if all of its members do
            whole = np.bincount(unit, weights=~ok, minlength=unit.max() + 1) == 0
            ok &= whole[unit]
        self.ev_state[rows[ok]] = RETURNED
        self.ev_state[rows[~ok]] = LOST
        if ok.any():
            self.take_off(rows[ok], -1)

    def finish_evictions(self) -> None:
        """Settle what the loop did not reach, then preempt every evicted job that lost its place."""
        for qi, units in enumerate(self._evicted):
            self.settle_evicted(units.rows)
            rows, unit = self._expand(units.rows)
            is_lost = self.ev_state[rows] == LOST
            if not is_lost.any():
                continue
            by = self.state.first_new_on_node[self.lost_to[rows]]
            unit_by = np.full(len(units), -1, dtype=np.int64)
            np.maximum.at(unit_by, unit, by)
            by = np.where(by >= 0, by, unit_by[unit])  # a gang member is lost with its gang
            name = self.state.queues[qi].name
            reason = (
                f"preempted to restore fair share in pool {self.state.pool}: queue {name} was above "
                f"{self.ctx.config.protected_fraction(self.state.pool):g}x its fair share"
            )
            self.preempt(rows[is_lost], by[is_lost], reason, "fairshare")
            if self.state.pool in self.ctx.preemption_tokens:
                self.ctx.preemption_tokens[self.state.pool] -= int(is_lost.sum())

    def preempt(self, rows: IntArray, by: IntArray, reason: str, kind: str) -> None:
        """Record preemptions of ``rows``, each caused by job row ``by`` (-1 = unknown), of
        upstream's preemption type ``kind``."""
        if kind == "urgency":  # fair-share losses were counted when evicted
            count_evicted(self.ctx.figures, self.db, self.state.pool, rows)
        ids, node_ids = self.db.ids, self.db.nodes.ids
        nodes = self.state.node_rows[self.state.local_node[self.db.cols["node"][rows]]].tolist()
        self.ctx.taken[rows] = True
        pool = self.state.pool
        self.ctx.preemptions.extend(
            Preemption(ids[row] or "", (ids[b] or "") if b >= 0 else "", reason, pool, node_ids[node], kind)
            for row, b, node in zip(rows.tolist(), by.tolist(), nodes, strict=True)
        )
