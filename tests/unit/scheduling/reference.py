"""A slow, obviously-correct scheduler to compare the vectorised one against.

One unit (job or whole gang) at a time: pick the queue whose cost after its next unit is
lowest, place each member on the best-fit node, remember keys that did not fit. Keys that
fit on no node when the pool's turn starts are skipped up front. No preemption and no rate
limits: tests using it configure those away. Per-pool policy (``scheduling.pools``): DRF
multipliers, ``disableHomeScheduling``, ``experimentalUnscheduledResources``, the pool's
default tolerations, and short-job penalties (``charged``: what each queue is still charged
for in a pool, counted in its allocation from the start). Away scheduling: after every home
turn, each pool with ``awayPools`` places its jobs of classes with ``awayNodeTypes`` on what its
away pools have left, tolerating the node types' taints, its queues holding what they hold at
home.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from armada.scheduling import JobRequirements, NodeSpec, QueueSpec, SchedulingConfig
from armada.scheduling.nodes import tolerates
from armada.scheduling.requirements import NodeSelectorRequirement, Toleration

Free = dict[str, dict[str, int]]


def _expression_holds(e: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    value = labels.get(e.key)
    if e.operator == "In":
        return value is not None and value in e.values
    if e.operator == "NotIn":
        return value is None or value not in e.values
    if e.operator == "Exists":
        return value is not None
    if e.operator == "DoesNotExist":
        return value is None
    try:
        number, bound = int(value or ""), int(e.values[0])
    except (ValueError, IndexError):
        return False
    return number > bound if e.operator == "Gt" else number < bound


def admits(node: NodeSpec, job: JobRequirements) -> bool:
    """Kubernetes node selector, taint and required affinity semantics, written out plainly."""
    if any(node.labels.get(k) != v for k, v in job.node_selector.items()):
        return False
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not tolerates(job.tolerations, taint):
            return False
    if job.affinity and not any(
        t.match_expressions and all(_expression_holds(e, node.labels) for e in t.match_expressions)
        for t in job.affinity
    ):
        return False
    return not job.pools or node.pool in job.pools


def with_tolerations(job: JobRequirements, tolerations: tuple[Toleration, ...]) -> JobRequirements:
    return msgspec.structs.replace(job, tolerations=job.tolerations + tolerations) if tolerations else job


def _shape_fits(node: NodeSpec, job: JobRequirements) -> bool:
    return all(
        node.allocatable.get(r, 0) - node.non_armada_allocated.get(r, 0) >= units
        for r, units in job.requests.items()
    )


@dataclass
class _Queue:
    spec: QueueSpec
    units: list[list[JobRequirements]]
    alloc: dict[str, int] = field(default_factory=dict)


class _Pool:
    """One pool's cycle, one unit at a time."""

    def __init__(self, nodes: list[NodeSpec], names: list[str], config: SchedulingConfig, pool: str) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.id)
        self.names = names
        totals = {r: sum(n.allocatable.get(r, 0) for n in self.nodes) for r in names}
        weight = config.drf_multipliers(pool)
        self.scale = {r: weight[r] / totals[r] if r in weight and totals[r] > 0 else 0.0 for r in names}
        self.tolerations = config.pool_config(pool).default_tolerations
        self.free: Free = {
            n.id: {r: n.allocatable.get(r, 0) - n.non_armada_allocated.get(r, 0) for r in names}
            for n in self.nodes
        }

    def share(self, alloc: dict[str, int]) -> float:
        return max(alloc.get(r, 0) * self.scale[r] for r in self.names)

    def dominant(self, job: JobRequirements) -> str:
        weighted = [
            job.requests.get(r, 0) * (self.scale[r] if self.scale[r] > 0 else 1e-30) for r in self.names
        ]
        return self.names[weighted.index(max(weighted))]

    def usable(self, job: JobRequirements, nodes: list[NodeSpec]) -> list[NodeSpec]:
        job = with_tolerations(job, self.tolerations)
        return [n for n in nodes if n.ready and not n.unschedulable and admits(n, job)]

    def best_node(self, job: JobRequirements, free: Free, nodes: list[NodeSpec]) -> str | None:
        fitting = [
            n for n in self.usable(job, nodes) if all(free[n.id][r] >= u for r, u in job.requests.items())
        ]
        if not fitting:
            return None
        d = self.dominant(job)
        return min(fitting, key=lambda n: (free[n.id][d], n.id)).id

    def place(self, unit: list[JobRequirements]) -> dict[str, str] | None:
        """Sequential best fit of every member; for uniform gangs the tightest label value."""
        label = unit[0].gang_node_uniformity_label
        values = sorted({n.labels[label] for n in self.nodes if label in n.labels}) if label else [""]
        best: tuple[int, str, dict[str, str], Free] | None = None
        for value in values:
            group = [n for n in self.nodes if not label or n.labels.get(label) == value]
            trial = {k: dict(v) for k, v in self.free.items()}
            placed: dict[str, str] = {}
            for member in unit:
                chosen = self.best_node(member, trial, group)
                if chosen is None:
                    break
                placed[member.id] = chosen
                for r, units in member.requests.items():
                    trial[chosen][r] -= units
            if len(placed) < len(unit):
                continue
            d = self.dominant(unit[0])
            leftover = sum(trial[n.id][d] for n in self.usable(unit[0], group))
            if best is None or (leftover, value) < best[:2]:
                best = (leftover, value, placed, trial)
        if best is None:
            return None
        self.free = best[3]
        return best[2]

    def run(self, queues: list[_Queue], default: str) -> dict[str, str]:
        leases: dict[str, str] = {}
        failed = {
            u[0].key(default)
            for q in queues
            for u in q.units
            if not self.best_node(u[0], self.free, self.nodes)
        }
        while True:
            heads = []
            for q in queues:
                q.units = [u for u in q.units if u[0].key(default) not in failed]
                if q.units:
                    after = dict(q.alloc)
                    for member in q.units[0]:
                        for r, units in member.requests.items():
                            after[r] = after.get(r, 0) + units
                    heads.append(((self.share(after) + 0.0) / q.spec.priority_factor, q.spec.name, q))
            if not heads:
                return leases
            queue = min(heads, key=lambda h: (h[0], h[1]))[2]
            unit = queue.units.pop(0)
            placed = self.place(unit)
            if placed is None:
                failed.add(unit[0].key(default))
                continue
            leases.update(placed)
            for member in unit:
                for r, units in member.requests.items():
                    queue.alloc[r] = queue.alloc.get(r, 0) + units


def reference_schedule(
    nodes: list[NodeSpec],
    jobs: list[JobRequirements],
    queues: list[QueueSpec],
    config: SchedulingConfig,
    charged: dict[tuple[str, str], dict[str, int]] | None = None,
) -> tuple[dict[str, str], set[str]]:
    """(job id -> node id leases, rejected job ids) for an empty cluster."""
    names = ["cpu", "memory"]
    for resources in [*(n.allocatable for n in nodes), *(j.requests for j in jobs)]:
        names += [r for r in resources if r not in names]
    pools_with_nodes = {n.pool for n in nodes}
    rejected = {
        j.id
        for j in jobs
        if nodes
        and (not j.pools or pools_with_nodes & set(j.pools))
        and not any(
            admits(n, with_tolerations(j, config.pool_config(n.pool).default_tolerations))
            and _shape_fits(n, j)
            for n in nodes
        )
        and not _fits_away(nodes, j, config)
    }
    leases: dict[str, str] = {}
    leased_in: dict[str, str] = {}  # job id -> the pool it was leased for
    default = config.default_priority_class_name
    turns: dict[str, _Pool] = {}
    for pool in sorted(pools_with_nodes):
        turns[pool] = _Pool([n for n in nodes if n.pool == pool], names, config, pool)
        excluded = rejected | set(leases)
        policy = config.pool_config(pool)
        if policy.disable_home_scheduling:
            continue
        unscheduled = policy.experimental_unscheduled_resources
        excluded |= {j.id for j in jobs if any(j.requests.get(r, 0) > 0 for r in unscheduled)}
        state = [
            _Queue(q, _units(q, jobs, pool, excluded, config), dict((charged or {}).get((q.name, pool), {})))
            for q in queues
        ]
        placed = turns[pool].run(state, default)
        leases.update(placed)
        leased_in.update(dict.fromkeys(placed, pool))
    by_id = {j.id: j for j in jobs}
    for home in config.pools:
        for away in home.away_pool_names if not home.disable_away_scheduling else []:
            if away not in pools_with_nodes:
                continue
            turn = _Pool([n for n in nodes if n.pool == away], names, config, home.name)
            turn.free = {k: dict(v) for k, v in turns[away].free.items()}
            goers = [
                _away(j, config.away_tolerations(j.priority_class_name))
                for j in jobs
                if config.priority_class(j.priority_class_name).away_node_types
                and (not j.pools or home.name in j.pools)
                and not (j.gang_id and home.disable_gang_away_scheduling)
            ]
            excluded = rejected | set(leases)
            state = []
            for q in queues:
                alloc = dict((charged or {}).get((q.name, home.name), {}))
                for job_id, pool in leased_in.items():
                    if pool == home.name and by_id[job_id].queue == q.name:
                        for r, units in by_id[job_id].requests.items():
                            alloc[r] = alloc.get(r, 0) + units
                state.append(_Queue(q, _units(q, goers, home.name, excluded, config), alloc))
            placed = turn.run(state, default)
            turns[away].free = turn.free
            leases.update(placed)
            leased_in.update(dict.fromkeys(placed, home.name))
    return leases, rejected


def _away(job: JobRequirements, tolerations: tuple[Toleration, ...]) -> JobRequirements:
    """The job as its away turn sees it: tolerating ``tolerations``, its pools already checked."""
    return msgspec.structs.replace(with_tolerations(job, tolerations), pools=())


def _fits_away(nodes: list[NodeSpec], job: JobRequirements, config: SchedulingConfig) -> bool:
    """Whether a node of an away pool of the job's pools could hold it, tolerating its class's
    away node types (and every such home pool's default tolerations)."""
    if not config.priority_class(job.priority_class_name).away_node_types:
        return False
    homes = [
        h
        for h in config.pools
        if (not job.pools or h.name in job.pools)
        and not h.disable_away_scheduling
        and not (job.gang_id and h.disable_gang_away_scheduling)
    ]
    reach = {a for h in homes for a in h.away_pool_names}
    extra = config.away_tolerations(job.priority_class_name) + tuple(
        t for h in homes for t in h.default_tolerations
    )
    away = _away(job, extra)
    return any(n.pool in reach and admits(n, away) and _shape_fits(n, job) for n in nodes)


def _units(
    queue: QueueSpec, jobs: list[JobRequirements], pool: str, excluded: set[str], config: SchedulingConfig
) -> list[list[JobRequirements]]:
    """A queue's units in queue order: single jobs, and complete gangs at their first member."""
    mine = [
        (i, j)
        for i, j in enumerate(jobs)
        if j.queue == queue.name and j.id not in excluded and (not j.pools or pool in j.pools)
    ]
    order = sorted(
        mine,
        key=lambda p: (
            -config.priority_class(p[1].priority_class_name).priority,
            p[1].priority,
            p[1].submitted,
            p[0],
        ),
    )
    units: list[list[JobRequirements]] = []
    seen: set[str] = set()
    for _, j in order:
        if not j.gang_id:
            units.append([j])
        elif j.gang_id not in seen:
            seen.add(j.gang_id)
            members = sorted((m for _, m in order if m.gang_id == j.gang_id), key=jobs.index)
            if len(members) >= j.gang_cardinality:
                units.append(members[: j.gang_cardinality])
    return units
