"""One pool's share of a cycle: fair-share eviction, then DRF-ordered placement in rounds.

:class:`PoolCycle` (the loop and placement, here) owns the pool's arrays
(:class:`~.poolstate.PoolState`), its fair-share eviction (:class:`~.eviction.Eviction`)
and its urgency preemption (:class:`~.urgency.Urgency`, which places through the cycle as
its :class:`~.urgency.Placer`).

Each round takes a prefix of every queue (:mod:`.candidates`), merges them into DRF order and
walks that order. A *run* of consecutive identical units is placed with one vectorised
best-fit step, which is exactly what one-at-a-time placement would do; long stretches that
mix keys are first tried *fused* (each key placed in bulk) and kept only if every unit fits.
A key that does not fit fails for the rest of the pool's cycle, and the round restarts
because the queues that lost a job now have lower costs than the merge assumed.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from armada.scheduling.candidates import (
    Units,
    first_violation,
    merge_order,
    queue_costs,
    scan_queued,
)
from armada.scheduling.columns import column_sums, outer, scaled_rows
from armada.scheduling.context import CycleContext
from armada.scheduling.decisions import GLOBAL_RATE_LIMITED, QUEUE_CORDONED, QUEUE_RATE_LIMITED
from armada.scheduling.eviction import Eviction
from armada.scheduling.figures import count_considered
from armada.scheduling.jobdb import QUEUED
from armada.scheduling.placement import (
    explain_misfit,
    fit_counts,
    place_identical,
    place_uniform_gang,
)
from armada.scheduling.poolstate import UNLIMITED, PoolState
from armada.scheduling.queues import QueueSpec
from armada.scheduling.runs import place_runs
from armada.scheduling.state import UsageHistory
from armada.scheduling.urgency import Urgency

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Below this many units a stretch is always placed run by run (exact sequential semantics).
FUSE_MIN = 256
FUSE_MAX = 1 << 16


class PoolCycle:
    """Schedules one pool; results go into the shared :class:`CycleContext`."""

    def __init__(
        self,
        ctx: CycleContext,
        pool: str,
        node_rows: IntArray,
        queues: list[QueueSpec],
        usage: UsageHistory,
        away_in: str | None = None,
    ) -> None:
        self.state = PoolState(ctx, pool, node_rows, queues, usage, away_in)
        self.ctx, self.db = ctx, ctx.db
        self.eviction = Eviction(self.state)
        self.urgency = Urgency(self.state, self.eviction, self)
        self.seg_len = FUSE_MIN
        self._floating_blocked: int | None = None

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        if not len(self.state.queues):
            return
        if self.state.away_in is not None and not self.state.key_usable.any():
            return  # no job may go away: nothing to do in the borrowed pool
        self.eviction.evict_for_fair_share()
        self._fail_hopeless_keys()
        if (self.state.stop < np.array([len(o) for o in self.state.orders], dtype=np.int64)).any():
            self.ctx.reasons.lookback = self.ctx.config.max_queue_lookback
        while not self.ctx.out_of_time():
            units, boundary = self._round()
            if not len(units):
                break
            units = units.take(merge_order(units))
            self.eviction.start_round(units)
            end, capped = self._global_cut(units)
            if boundary is not None:
                at = np.flatnonzero((units.queue == boundary[1]) & (units.cost == boundary[0]))
                end = min(end, int(at[-1]))
            done, failed = self._process(units, end)
            self._advance(units, done)
            if done == end and self._floating_blocked is not None:
                self._fail(self._floating_blocked)
                failed = True
            if failed:
                if not self.ctx.explain and self._nothing_fits():
                    break  # the rest of the turn would only fail keys: it decides nothing
                continue
            if done == 0 or capped or boundary is None:
                break
        self.eviction.finish_evictions()

    def _fail_hopeless_keys(self) -> None:
        """Fail keys that fit on no node before looking at any job (a full cluster stays cheap).

        A key that fits nowhere even counting what it could urgency-preempt is skipped for the
        pool's turn. Not after fair-share evictions: those free space during the turn.
        """
        if self.eviction.evicted_any():
            return
        for key in self._keys_left():
            if not self._fits_somewhere(key):
                self._fail(key)

    def _nothing_fits(self) -> bool:
        """No key left fits on any node, even counting what it could urgency-preempt, and no
        evicted job waits: the rest of the turn can place, return or preempt nothing."""
        return not self.eviction.evicted_any() and not any(map(self._fits_somewhere, self._keys_left()))

    def _keys_left(self) -> list[int]:
        """Keys with queued jobs that may still be placed in this turn."""
        state = self.state
        usable = state.key_usable & ~state.key_failed
        return sorted({k for q in state.db_queue.tolist() for k in self.db.queued_counts[q] if usable[k]})

    def _fits_somewhere(self, key: int) -> bool:
        """Some node could hold a job of ``key`` now, counting what it could urgency-preempt."""
        state = self.state
        reclaimable = self.urgency.reclaimable(self.urgency.lower_classes(self.db.keys.infos[key].priority))
        free = state.free if reclaimable is None else state.free + reclaimable
        return bool(fit_counts(free, state.key_requests[key], state.mask(key), 1).any())

    def _round(self) -> tuple[Units, tuple[float, int] | None]:
        """Candidates of every queue for this round and the round's DRF boundary."""
        key_ok = self.state.key_usable & ~self.state.key_failed
        slots = self._slot_estimate(key_ok)
        total_weight = float(self.state.weights.sum())
        parts: list[Units] = []
        chunked_parts: list[int] = []
        for qi, spec in enumerate(self.state.queues):
            if not key_ok[list(self.db.queued_counts[int(self.state.db_queue[qi])])].any():
                self.state.cursor[qi] = self.state.stop[qi]
            tokens = math.floor(self.ctx.queue_tokens.get(spec.name, float(UNLIMITED)))
            want = max(128, math.ceil(1.5 * slots * self.state.weights[qi] / total_weight))
            rows = pos = np.zeros(0, dtype=np.int64)
            if not spec.cordoned and tokens > 0:
                rows, pos = scan_queued(
                    self.db,
                    order=self.state.orders[qi],
                    start=int(self.state.cursor[qi]),
                    stop=int(self.state.stop[qi]),
                    want=want,
                    key_ok=key_ok,
                    taken=self.ctx.taken,
                    cardinality=self.state.cardinality,
                    gang_rep=self.state.gang_rep,
                )
            elif spec.cordoned:
                self.ctx.reasons.by_queue[spec.name] = QUEUE_CORDONED
            keys = self.db.cols["key"][rows].astype(np.int64)
            queued = Units(
                rows,
                keys,
                self.state.cardinality[keys],
                np.zeros(len(rows), dtype=bool),
                pos,
                np.full(len(rows), qi),
                np.zeros(len(rows)),
            )
            cut = self._rate_cut(qi, queued, tokens)
            chunked = (
                cut == len(queued) and len(rows) >= want and (len(pos) and pos[-1] + 1 < self.state.stop[qi])
            )
            units = Units.concat(
                [self.eviction.pending_evicted(qi), self._within_class_limits(qi, queued.take(slice(0, cut)))]
            )
            if not len(units):
                continue
            parts.append(units)
            if chunked:
                chunked_parts.append(len(parts) - 1)
        units = Units.concat(parts)
        state = self.state
        units.cost = queue_costs(
            scaled_rows(state.key_requests, units.keys, units.counts),
            units.queue,
            state.alloc,
            state.scale,
            state.usage,
            state.weights,
        )
        # The cheapest of the queues with more to come after their last unit here.
        ends = np.cumsum([len(part) for part in parts]) - 1
        boundary = min(
            ((float(units.cost[ends[p]]), int(units.queue[ends[p]])) for p in chunked_parts), default=None
        )
        return units, boundary

    def _slot_estimate(self, key_ok: BoolArray) -> int:
        """Most jobs of any usable key the pool's free capacity could hold (ignoring packing),
        and no more than the cycle may still lease: a round of a million queued jobs on an
        empty fleet would otherwise merge them all to lease the cycle's few thousand."""
        requests = self.state.key_requests[key_ok]
        if not len(requests):
            return 0
        free = np.maximum(column_sums(self.state.free, self.state.schedulable), 0)
        with np.errstate(divide="ignore"):
            per_resource = np.where(requests > 0, free // np.maximum(requests, 1), UNLIMITED)
        return int(min(per_resource.min(axis=1).max(), self.ctx.global_tokens, 10**7))

    def _rate_cut(self, qi: int, units: Units, tokens: int) -> int:
        """How many of a queue's queued units its token bucket lets through."""
        cut = int(np.searchsorted(np.cumsum(units.counts), tokens, side="right"))
        if cut < len(units):
            self.ctx.reasons.by_queue[self.state.queues[qi].name] = QUEUE_RATE_LIMITED
        return cut

    def _within_class_limits(self, qi: int, units: Units) -> Units:
        """Drop, per priority class, the queue's units from the first that would pass its limit."""
        if not len(units) or (self.state.limits[qi] >= UNLIMITED).all():
            return units
        name = self.state.queues[qi].name
        classes = self.state.key_class[units.keys]
        keep = np.ones(len(units), dtype=bool)
        for ci in np.unique(classes).tolist():
            members = np.flatnonzero(classes == ci)
            requests = units.counts[members, None] * self.state.key_requests[units.keys[members]]
            over = first_violation(
                np.cumsum(requests, axis=0) + self.state.alloc_by_class[qi, ci], self.state.limits[qi, ci]
            )
            if over < len(members):
                keep[members[over:]] = False
                class_name = self.db.priority_class_names[ci]
                reason = f"queue {name} over its {class_name} resource limit in pool {self.state.where}"
                for key in np.unique(units.keys[members[over:]]).tolist():
                    self.ctx.reasons.by_queue_key.setdefault(name, {})[key] = reason
        return units if keep.all() else units.take(np.flatnonzero(keep))

    def _global_cut(self, units: Units) -> tuple[int, bool]:
        """Prefix of the merged order within the global rate limit, the pool's floating
        resources and its budget."""
        new = ~units.evicted
        jobs = np.cumsum(units.counts * new)
        end = int(np.searchsorted(jobs, math.floor(self.ctx.global_tokens), side="right"))
        if end < len(units):
            self.ctx.reasons.cycle = GLOBAL_RATE_LIMITED
        end = self._floating_cut(units, new, end)
        if (self.state.budget >= UNLIMITED).all():
            return end, end < len(units)
        requests = (units.counts * new)[:, None] * self.state.key_requests[units.keys]
        over = first_violation(np.cumsum(requests, axis=0) + self.state.scheduled_new, self.state.budget)
        if over < end:
            end = over
            self.ctx.reasons.cycle = f"pool {self.state.where}: maximumResourceFractionToSchedule reached"
        return end, end < len(units)

    def _floating_cut(self, units: Units, new: BoolArray, end: int) -> int:
        """Shorten the prefix to what the pool's floating resources can hold; the key of the
        first unit that does not fit fails once the prefix is placed (``_floating_blocked``)."""
        self._floating_blocked = None
        columns = self.state.floating_cols
        if not len(columns):
            return end
        requests = (units.counts * new)[:, None] * self.state.key_requests[units.keys][:, columns]
        over = first_violation(np.cumsum(requests, axis=0), self.state.floating_left[columns])
        if over < end:
            self._floating_blocked = int(units.keys[over])
            return over
        return end

    def _advance(self, units: Units, done: int) -> None:
        head = units.take(slice(0, done))
        queued = ~head.evicted
        np.maximum.at(self.state.cursor, head.queue[queued], head.pos[queued] + 1)
        self.eviction.consume_evicted(head.queue[head.evicted])
        self.ctx.considered += int(head.counts.sum())
        queues = self.state.db_queue[head.queue].astype(np.int64)
        count_considered(self.ctx.figures, self.db, self.state.pool, queues, head.keys, head.counts)

    def _process(self, units: Units, end: int) -> tuple[int, bool]:
        """Place ``units[:end]``; returns how many were decided and whether a key failed."""
        change = (units.keys[1:] != units.keys[:-1]) | units.evicted[1:] | units.evicted[:-1]
        change |= self.state.uniform[units.keys[1:]]
        starts = np.concatenate([[0], np.flatnonzero(change) + 1, [len(units)]])
        special = [*np.flatnonzero(self.state.uniform[units.keys]).tolist(), len(units)]
        i = 0
        fuse = True  # a stretch too short to fuse ends fusing until the next round
        while i < end:
            if self.ctx.out_of_time():
                return i, False
            run_end = min(end, int(starts[np.searchsorted(starts, i, side="right")]))
            stretch = min(end, i + self.seg_len, special[int(np.searchsorted(special, i))])
            if fuse and stretch - i >= FUSE_MIN and stretch > run_end:
                if self._fused(units, i, stretch):
                    i = stretch
                    self.seg_len = min(2 * self.seg_len, FUSE_MAX)
                    continue
                # Near capacity: halve the stretch; below FUSE_MIN go run by run.
                self.seg_len = (stretch - i) // 2
                if self.seg_len < FUSE_MIN:
                    fuse, self.seg_len = False, FUSE_MIN
                continue
            if not fuse and not self.eviction.evicted_any():
                placed = self._exact_runs(units, i, end, starts)
                if placed > i:
                    i = placed
                    continue
            ok = self._exact(units, i, run_end)
            i = run_end
            if not ok:
                return i, True
        return i, False

    def _exact_runs(self, units: Units, i: int, end: int, starts: IntArray) -> int:
        """Place the runs from ``i`` as :meth:`_exact` would one after the other, in one go
        (:func:`place_runs`), while they are runs of single jobs (no gang, evicted or uniform
        unit; the turn evicted nothing) that fit whole. Returns where it stopped; nothing
        placed if fewer than two runs qualify."""
        state = self.state
        keys = units.keys[i:end]
        plain = (state.cardinality[keys] == 1) & ~state.uniform[keys] & ~units.evicted[i:end]
        stop = end if plain.all() else i + int(np.argmin(plain))
        inner = starts[np.searchsorted(starts, i, side="right") : np.searchsorted(starts, stop)]
        if not len(inner):
            return i
        bounds = np.concatenate([[i], inner, [stop]])
        run_keys = units.keys[bounds[:-1]]
        nodes = place_runs(
            state.free,
            keys=run_keys,
            bounds=bounds,
            requests=state.key_requests,
            masks={key: state.mask(key) for key in np.flatnonzero(np.bincount(run_keys)).tolist()},
            dominant=state.key_dominant,
            out_of_time=self.ctx.out_of_time,
        )
        self.commit(units, np.arange(i, i + len(nodes)), nodes)
        return i + len(nodes)

    # -- placing -------------------------------------------------------------------------

    def _exact(self, units: Units, i: int, j: int) -> bool:
        """Place the run ``units[i:j]`` (one key) as sequential best fit would; False if the key failed."""
        if units.evicted[i]:
            self.eviction.settle_evicted(units.rows[i:j])
            return True
        key = int(units.keys[i])
        request, mask = self.state.key_requests[key], self.state.mask(key)
        dominant = int(self.state.key_dominant[key])
        size = int(self.state.cardinality[key])
        if self.state.uniform[key]:
            for u in range(i, j):
                placement = self.place_uniform(
                    self.state.free - self.eviction.held, key, request, mask, dominant
                )
                if placement is None:
                    if self.urgency.urgent(units, u, u + 1) == 0:
                        self._fail(key)
                        return False
                else:
                    self.commit(units, np.array([u]), placement)
            return True
        nodes = self._place_run(request, mask, int(units.counts[i:j].sum()), dominant, size)
        fitted = len(nodes) // size
        self.commit(units, np.arange(i, i + fitted), nodes[: fitted * size])
        if i + fitted < j:
            fitted += self.urgency.urgent(units, i + fitted, j)
            if i + fitted < j:
                self._fail(key)
                return False
        return True

    def _place_run(
        self, request: IntArray, mask: BoolArray, count: int, dominant: int, size: int
    ) -> IntArray:
        """Nodes for ``count`` identical jobs: free space first, then space held by evicted jobs."""
        holding = self.eviction.evicted_any()  # else nothing is held
        strict = self.state.free - self.eviction.held if holding else self.state.free
        nodes = place_identical(strict, request, mask, count, dominant).nodes
        nodes = nodes[: len(nodes) - len(nodes) % size]
        if len(nodes) == count or not holding or not self.eviction.held.any():
            return nodes
        strict -= outer(np.bincount(nodes, minlength=len(strict)), request)
        return np.concatenate(
            [nodes, self.eviction.displace(strict, request, mask, count - len(nodes), size=size)]
        )

    def place_uniform(
        self, free: IntArray, key: int, request: IntArray, mask: BoolArray, dominant: int
    ) -> IntArray | None:
        codes, values = self.db.nodes.label_values(self.db.keys.infos[key].uniformity_label)
        placement = place_uniform_gang(
            free,
            request=request,
            mask=mask,
            count=int(self.state.cardinality[key]),
            dominant=dominant,
            label_codes=codes[self.state.node_rows],
            label_values=values,
        )
        return None if placement is None else placement.nodes

    def _fused(self, units: Units, i: int, j: int) -> bool:
        """Place ``units[i:j]`` key by key in bulk; commit only if every unit fits."""
        # New jobs get free space only; evicted jobs of the stretch come back to their held space.
        state = self.state
        trial = state.free - self.eviction.held
        segment = np.arange(i, j)
        evicted = segment[units.evicted[i:j]]
        if len(evicted):
            need = self.eviction.evicted_need(units.rows[evicted])
            if ((state.free - need < 0) & (need > 0)).any():
                return False
        plans: list[tuple[IntArray, IntArray]] = []
        fresh = segment[~units.evicted[i:j]]
        keys, first = np.unique(units.keys[fresh], return_index=True)
        saved = self.eviction.save_claims()
        protected = frozenset(units.rows[evicted].tolist())  # they come back before new jobs
        for key in keys[np.argsort(first)].tolist():
            chosen = fresh[units.keys[fresh] == key]
            request, mask, size = state.key_requests[key], state.mask(key), int(state.cardinality[key])
            total = int(units.counts[chosen].sum())
            nodes = place_identical(trial, request, mask, total, int(state.key_dominant[key])).nodes
            nodes = nodes[: len(nodes) - len(nodes) % size]
            trial -= outer(np.bincount(nodes, minlength=len(trial)), request)
            if len(nodes) < total and saved is not None:  # displacement updates ``trial`` itself
                more = self.eviction.displace(
                    trial, request, mask, total - len(nodes), size=size, protected=protected
                )
                nodes = np.concatenate([nodes, more])
            if len(nodes) < total:
                self.eviction.restore_claims(saved)
                return False
            plans.append((chosen, nodes))
        if len(evicted):
            self.eviction.settle_evicted(units.rows[evicted])
        for chosen, nodes in plans:
            self.commit(units, chosen, nodes)
        return True

    def members(self, units: Units, chosen: IntArray) -> IntArray:
        """Job rows of the chosen units, gang members expanded, in unit order."""
        if not self.db.keys.infos[int(units.keys[chosen[0]])].gang_cardinality:
            return units.rows[chosen]
        out: list[int] = []
        state, taken, gangs = self.db.cols["state"], self.ctx.taken, self.db.gangs
        size = int(self.state.cardinality[int(units.keys[chosen[0]])])
        for gang_index in self.db.cols["gang"][units.rows[chosen]].tolist():
            gang = gangs[gang_index]
            assert gang is not None
            if len(gang.members) == size:  # the usual case: exactly the gang, all queued
                out.extend(gang.members)
            else:
                out.extend([m for m in gang.members if state[m] == QUEUED and not taken[m]][:size])
        return np.array(out, dtype=np.int64)

    def commit(self, units: Units, chosen: IntArray, nodes: IntArray) -> None:
        """Lease the chosen units on local ``nodes``, one per member job, in order (units of
        several keys: single jobs only)."""
        if not len(chosen):
            return
        state = self.state
        rows = self.members(units, chosen)
        keys = units.keys[chosen]
        if (keys == keys[0]).all():
            self._charge(int(keys[0]), units, chosen, nodes)
        else:
            for key in np.unique(keys).tolist():
                of_key = keys == key
                self._charge(key, units, chosen[of_key], nodes[of_key])
        self.ctx.global_tokens -= len(rows)
        if self.eviction.evicted_any():  # the jobs evicted jobs lose their place to
            unique, first = np.unique(nodes, return_index=True)
            fresh = state.first_new_on_node[unique] < 0
            state.first_new_on_node[unique[fresh]] = rows[first[fresh]]
        self.ctx.record_leases(rows, state.node_rows[nodes], state.pool)

    def _charge(self, key: int, units: Units, chosen: IntArray, nodes: IntArray) -> None:
        """Take the chosen units' (of ``key``) resources from ``nodes`` and their queues' tokens,
        and give them to their queues."""
        state = self.state
        request = state.key_requests[key]
        if 8 * len(nodes) < len(state.free):  # a few nodes of many: touch only those
            np.subtract.at(state.free, nodes, request)
        else:
            state.free -= outer(np.bincount(nodes, minlength=len(state.free)), request)
        queues = units.queue[chosen]
        per_queue = np.bincount(queues, weights=units.counts[chosen], minlength=len(state.queues))
        added = per_queue.astype(np.int64)[:, None] * request
        state.alloc += added
        state.alloc_by_class[:, state.key_class[key]] += added
        state.scheduled_new += len(nodes) * request
        state.floating_left -= len(nodes) * request
        for qi in np.flatnonzero(per_queue).tolist():
            name = state.queues[qi].name
            if name in self.ctx.queue_tokens:
                self.ctx.queue_tokens[name] -= float(per_queue[qi])

    def _fail(self, key: int) -> None:
        self.state.key_failed[key] = True
        info = self.db.keys.infos[key]
        reason = explain_misfit(
            self.state.free,
            request=self.state.key_requests[key],
            mask=self.state.mask(key),
            names=self.state.names,
            pool=self.state.where,
            constraints=info.describe_constraints(),
        )
        if info.gang_cardinality:
            reason = f"gang of {info.gang_cardinality} does not fit: {reason}"
        left = self.state.floating_left
        short = [
            self.state.names[c]
            for c in self.state.floating_cols.tolist()
            if self.state.key_requests[key, c] > left[c]
        ]
        if short:
            reason = f"pool {self.state.where}: floating resource {', '.join(short)} exhausted"
        if self.eviction.rate_limited:
            reason = f"pool {self.state.pool}: fair-share preemption rate limit reached; {reason}"
        known = self.ctx.reasons.by_key.get(key)
        self.ctx.reasons.by_key[key] = reason if known is None else f"{known}; {reason}"
