"""The state of one pool during a cycle: free capacity, queues, allocations and limits.

Built once per pool and cycle from the node and job databases (no per-job work), then
mutated as jobs are placed (:mod:`.pool`), evicted (:mod:`.eviction`) and preempted
(:mod:`.eviction`, :mod:`.urgency`). It holds data and derived lookups only; the objects
that change it own it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from armada.scheduling.away import AWAY_QUEUE_SUFFIX, away_keys, away_running, away_tolerations, cycle_use
from armada.scheduling.columns import column_sums, reduce_columns
from armada.scheduling.context import CycleContext
from armada.scheduling.fairshare import dominant_shares, drf_scale, fair_shares, water_fill
from armada.scheduling.placement import dominant_columns
from armada.scheduling.queues import QueueSpec
from armada.scheduling.requirements import Toleration
from armada.scheduling.shares import QueueShare
from armada.scheduling.state import UsageHistory

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Stands in for "no limit" in integer limit arrays.
UNLIMITED = 1 << 62


class PoolState:
    """Arrays describing one pool: nodes (local index = order by node id) and active queues."""

    def __init__(
        self,
        ctx: CycleContext,
        pool: str,
        node_rows: IntArray,
        queues: list[QueueSpec],
        usage: UsageHistory,
        away_in: str | None = None,
    ) -> None:
        """``away_in``: the nodes are those of this away pool, borrowed for ``pool``'s jobs
        (:mod:`.away`); else they are ``pool``'s own."""
        db, config = ctx.db, ctx.config
        self.ctx, self.db, self.pool, self.node_rows = ctx, db, pool, node_rows
        self.away_in = away_in
        #: how reasons name where jobs were tried
        self.where = pool if away_in is None else f"{pool} (away in {away_in})"
        nodes = db.nodes
        # Copies of the pool's rows (``np.take``: several times faster than ``matrix[node_rows]``).
        allocatable = np.take(nodes.allocatable(), node_rows, axis=0)
        self.running_by_class: IntArray = np.take(db.node_allocation(), node_rows, axis=0)
        running = reduce_columns(np.add, self.running_by_class)
        self.free: IntArray = allocatable - np.take(nodes.non_armada(), node_rows, axis=0) - running
        self.schedulable: BoolArray = nodes.schedulable[node_rows]
        if ctx.paused_nodes is not None:
            self.schedulable = self.schedulable & ~ctx.paused_nodes[node_rows]
        self.totals: IntArray = column_sums(allocatable)
        self.names = db.resources.names
        self.policy = config.pool_config(pool)
        self.scale = drf_scale(self.totals, self.names, config.drf_multipliers(pool))
        self.local_node = np.full(nodes.size, -1, dtype=np.int64)
        self.local_node[node_rows] = np.arange(len(node_rows))
        self.key_requests = db.keys.requests()
        #: per key: the column placement packs by (:func:`~.placement.dominant_columns`)
        self.key_dominant = dominant_columns(self.key_requests, self.scale)
        infos = db.keys.infos
        self._away_tolerations: list[tuple[Toleration, ...]] = []
        if away_in is None:
            self.key_usable = ctx.key_ok & np.array([i.allows_pool(pool) for i in infos], dtype=bool)
            self._apply_key_policy()
        else:
            self.key_usable = ctx.key_ok & away_keys(db, config, self.policy, away_in)
            self._away_tolerations = away_tolerations(db, config)
            self.free -= cycle_use(ctx, self.local_node, len(node_rows), self.key_requests)
        self.cardinality = np.array([max(1, i.gang_cardinality) for i in infos], dtype=np.int64)
        self.key_class = np.array([db.pc_index(i.index) for i in infos], dtype=np.int64)
        self.uniform = np.array([bool(i.uniformity_label) for i in infos], dtype=bool)
        self.key_failed = np.zeros(len(infos), dtype=bool)
        self._masks: dict[int, BoolArray] = {}
        self.gang_rep = np.full(len(db.gangs), -1, dtype=np.int64)
        self._setup_queues(queues, usage)
        if away_in is not None:
            self._count_home_leases()
        self.first_new_on_node = np.full(len(node_rows), -1, dtype=np.int64)
        budget = config.maximum_resource_fraction_to_schedule
        self.budget = np.array(
            [
                int(budget[n] * t) if budget.get(n, 1.0) < 1.0 else UNLIMITED
                for n, t in zip(self.names, self.totals, strict=True)
            ]
        )
        self.scheduled_new = np.zeros(len(self.names), dtype=np.int64)
        self._setup_floating()
        self._setup_away_jobs()

    def _setup_away_jobs(self) -> None:
        """Away jobs on the pool's nodes: ``away_by_class`` (local node x class x R) holds their
        resources (what home jobs may reclaim), ``away_alloc`` their queues' use (their share)."""
        self.away_by_class: IntArray | None = None
        self.away_alloc: dict[str, IntArray] = {}
        if self.away_in is not None or not self.ctx.config.away_scheduling:
            return
        db = self.db
        rows = away_running(db, self.pool, self.local_node)
        if not len(rows):
            return
        keys = db.cols["key"][rows].astype(np.int64)
        requests = self.key_requests[keys]
        self.away_by_class = np.zeros_like(self.running_by_class)
        np.add.at(
            self.away_by_class, (self.local_node[db.cols["node"][rows]], self.key_class[keys]), requests
        )
        queues = db.cols["queue"][rows]
        for q in np.unique(queues).tolist():
            self.away_alloc[db.queue_names[q]] = requests[queues == q].sum(axis=0)

    def _apply_key_policy(self) -> None:
        """Keys the pool's policy keeps out (``disableHomeScheduling``,
        ``experimentalUnscheduledResources``), with the reason their waiting jobs give."""
        policy, resources = self.policy, self.db.resources
        allowed = self.key_usable.copy()
        if policy.disable_home_scheduling:
            self.key_usable[:] = False
        for name in policy.experimental_unscheduled_resources:
            if name in resources:
                self.key_usable &= self.key_requests[:, resources.column(name)] == 0
        why = (
            "home scheduling disabled"
            if policy.disable_home_scheduling
            else "requests an unscheduled resource"
        )
        by_key = self.ctx.reasons.by_key
        for key in np.flatnonzero(allowed & ~self.key_usable).tolist():
            reason = f"pool {self.pool}: {why}"
            by_key[key] = f"{by_key[key]}; {reason}" if key in by_key else reason

    def _count_home_leases(self) -> None:
        """An away turn orders queues by what they hold at home including this cycle's leases
        there (the db shows them only once applied)."""
        cols = self.db.cols
        for rows, pool in zip(self.ctx.lease_rows, self.ctx.lease_pools, strict=True):
            if pool != self.pool:
                continue
            queues = self.queue_of[cols["queue"][rows]]
            keys = cols["key"][rows].astype(np.int64)
            active = queues >= 0
            requests = self.key_requests[keys[active]]
            np.add.at(self.alloc, queues[active], requests)
            np.add.at(self.alloc_by_class, (queues[active], self.key_class[keys[active]]), requests)

    def _setup_floating(self) -> None:
        """Floating resources: no node limits them (their node columns are made unlimited);
        ``floating_left`` is what the pool has left of each (UNLIMITED elsewhere)."""
        resources = self.db.resources
        self.floating_left = np.full(len(self.names), UNLIMITED, dtype=np.int64)
        quantities = self.ctx.config.floating_in(self.pool)
        columns = [resources.column(name) for name in quantities if name in resources]
        self.floating_cols = np.array(columns, dtype=np.int64)
        if not columns:
            return
        held = self.alloc_by_class.sum(axis=(0, 1)) if len(self.queues) else np.zeros(len(self.names))
        for name in quantities:
            if name in resources:
                column = resources.column(name)
                self.floating_left[column] = quantities[name] - int(held[column])
        self.free[:, self.floating_cols] = UNLIMITED >> 8

    def _setup_queues(self, queues: list[QueueSpec], usage: UsageHistory) -> None:
        db, pool = self.db, self.pool
        # Queues the db has never seen hold nothing; queues without a spec get default settings.
        specs = {q.name: q for q in queues if db.has_queue(q.name)}
        for name in db.queue_names:
            specs.setdefault(name, QueueSpec(name))
        n_classes, width = len(db.priority_class_names), len(self.names)
        active: list[QueueSpec] = []
        demands: list[IntArray] = []
        allocs: list[IntArray] = []
        penalties: list[IntArray] = []
        for name in sorted(specs):
            index = db.queue_index(name)
            alloc = db.queue_allocation(index, pool)[:, :width]
            charged = db.penalties.allocation(index, pool, self.ctx.now, width)
            demand = np.zeros(width, dtype=np.int64)
            for key, count in db.queued_counts[index].items():
                if self.key_usable[key]:
                    demand += count * self.key_requests[key]
            if demand.any() or alloc.any() or charged.any():
                active.append(specs[name])
                demands.append(demand)
                allocs.append(alloc)
                penalties.append(charged)
        self.queues = active
        self.db_queue = np.array([db.queue_index(q.name) for q in active], dtype=np.int64)
        #: db queue index -> index among this pool's active queues (-1 = not active)
        self.queue_of = np.full(len(db.queue_names), -1, dtype=np.int64)
        self.queue_of[self.db_queue] = np.arange(len(self.db_queue))
        count = len(active)
        self.alloc_by_class: IntArray = np.array(allocs).reshape(count, n_classes, width).copy()
        #: resources charged for short jobs that ended recently (``shortJobPenaltyCutoff``)
        self.penalty: IntArray = np.array(penalties).reshape(count, width)
        #: what each queue is charged for in fair share: its allocation plus short-job penalties
        self.alloc: IntArray = self.alloc_by_class.sum(axis=1) + self.penalty
        self.demand: IntArray = np.array(demands).reshape(count, width)
        self.weights = np.array([q.priority_factor for q in active], dtype=np.float64)
        self.usage = np.array([usage.of(pool, q.name) for q in active], dtype=np.float64)
        self.limits = np.full((count, n_classes, width), UNLIMITED, dtype=np.int64)
        for qi, spec in enumerate(active):
            for ci, class_name in enumerate(db.priority_class_names):
                fractions = dict(self.ctx.config.priority_classes[class_name].fractions_in(pool))
                for resource, fraction in spec.resource_limits_by_priority_class_name.get(
                    class_name, {}
                ).items():
                    fractions[resource] = min(fraction, fractions.get(resource, fraction))
                for resource, fraction in fractions.items():
                    # a fraction of 1 or more can never bind: the pool itself is the limit
                    if fraction < 1.0 and resource in db.resources:
                        column = db.resources.column(resource)
                        self.limits[qi, ci, column] = int(fraction * self.totals[column])
        self.orders = [db.queued_rows(int(q)) for q in self.db_queue]
        self.cursor = np.zeros(count, dtype=np.int64)
        lookback = self.ctx.config.max_queue_lookback
        self.stop = np.array(
            [len(o) if lookback <= 0 else min(len(o), lookback) for o in self.orders], dtype=np.int64
        )
        self.demand_share = np.minimum(1.0, dominant_shares(self.alloc + self.demand, self.scale))
        self.adjusted = water_fill(self.weights, self.demand_share)

    def mask(self, key: int) -> BoolArray:
        mask = self._masks.get(key)
        if mask is None:
            info = self.db.keys.infos[key]
            tolerations = info.tolerations + self.policy.default_tolerations
            if self._away_tolerations:
                tolerations += self._away_tolerations[key]
            full = self.db.nodes.constraint_mask(info.node_selector, tolerations, info.affinity)
            mask = self._masks[key] = full[self.node_rows] & self.schedulable
        return mask

    # -- report --------------------------------------------------------------------------

    def shares(self) -> dict[str, QueueShare]:
        """Each active queue's share, and ``<queue>-away`` for queues borrowing here (upstream's
        away queues: the queue's weight, no demand, so no fair share)."""
        actual = dominant_shares(self.alloc, self.scale)
        penalty = dominant_shares(self.penalty, self.scale)
        fair = fair_shares(self.weights, (self.demand_share > 0) | (actual > 0))
        weights = {q.name: q.priority_factor for q in self.queues}
        away = {
            f"{name}{AWAY_QUEUE_SUFFIX}": QueueShare(
                weight=weights.get(name, 1.0),
                fair_share=0.0,
                adjusted_fair_share=0.0,
                actual_share=float(dominant_shares(alloc[None, :], self.scale)[0]),
                demand=0.0,
                usage=0.0,
            )
            for name, alloc in self.away_alloc.items()
        }
        return away | {
            q.name: QueueShare(
                weight=q.priority_factor,
                fair_share=float(fair[i]),
                adjusted_fair_share=float(self.adjusted[i]),
                actual_share=float(actual[i]),
                demand=float(self.demand_share[i]),
                usage=float(self.usage[i]),
                short_job_penalty=float(penalty[i]),
            )
            for i, q in enumerate(self.queues)
        }
