"""A slow, obviously-correct scheduler to compare the vectorised one against.

One unit (job or whole gang) at a time: pick the queue whose cost after its next unit is
lowest, try to place each member on the best-fit node, remember keys that did not fit.
No preemption, no rate limits: tests using it configure those away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from armada.scheduling import JobRequirements, NodeSpec, QueueSpec, SchedulingConfig
from armada.scheduling.nodes import tolerates
from armada.scheduling.requirements import NodeSelectorRequirement


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


@dataclass
class _Queue:
    spec: QueueSpec
    units: list[list[JobRequirements]]
    alloc: dict[str, int] = field(default_factory=dict)


def reference_schedule(
    nodes: list[NodeSpec], jobs: list[JobRequirements], queues: list[QueueSpec], config: SchedulingConfig
) -> tuple[dict[str, str], set[str]]:
    """(job id -> node id leases, rejected job ids) for an empty cluster."""
    names = ["cpu", "memory"]
    for thing in [*(n.allocatable for n in nodes), *(j.requests for j in jobs)]:
        names += [r for r in thing if r not in names]
    default = config.default_priority_class_name
    pools_with_nodes = {n.pool for n in nodes}
    rejected = {
        j.id
        for j in jobs
        if nodes
        and (not j.pools or pools_with_nodes & set(j.pools))
        and not any(
            admits(n, j) and all(n.allocatable.get(r, 0) - n.non_armada_allocated.get(r, 0) >= u
                                 for r, u in j.requests.items())
            for n in nodes
        )
    }  # fmt: skip
    leases: dict[str, str] = {}
    for pool in sorted({n.pool for n in nodes}):
        pool_nodes = sorted((n for n in nodes if n.pool == pool), key=lambda n: n.id)
        totals = {r: sum(n.allocatable.get(r, 0) for n in pool_nodes) for r in names}
        considered = config.dominant_resource_fairness_resources_to_consider
        scale = {r: 1.0 / totals[r] if r in considered and totals[r] > 0 else 0.0 for r in names}
        free = {
            n.id: {r: n.allocatable.get(r, 0) - n.non_armada_allocated.get(r, 0) for r in names}
            for n in pool_nodes
        }

        def share(alloc: dict[str, int]) -> float:
            return max(alloc.get(r, 0) * scale[r] for r in names)  # noqa: B023

        def dominant(job: JobRequirements) -> str:
            weighted = [job.requests.get(r, 0) * (scale[r] if scale[r] > 0 else 1e-30) for r in names]  # noqa: B023
            return names[weighted.index(max(weighted))]

        def best_node(
            job: JobRequirements, free: dict[str, dict[str, int]], allowed: list[NodeSpec]
        ) -> str | None:
            fitting = [
                n for n in allowed
                if n.ready and not n.unschedulable and admits(n, job)
                and all(free[n.id][r] >= job.requests.get(r, 0) for r in names)
            ]  # fmt: skip
            if not fitting:
                return None
            d = dominant(job)
            return min(fitting, key=lambda n: (free[n.id][d], n.id)).id

        def place(unit: list[JobRequirements]) -> dict[str, str] | None:
            label = unit[0].gang_node_uniformity_label
            groups = [pool_nodes] if not label else [
                [n for n in pool_nodes if n.labels.get(label) == value]  # noqa: B023
                for value in sorted({n.labels[label] for n in pool_nodes if label in n.labels})  # noqa: B023
            ]  # fmt: skip
            best: tuple[int, str, dict[str, str], dict[str, dict[str, int]]] | None = None
            for group in groups:
                trial = {k: dict(v) for k, v in free.items()}  # noqa: B023
                placed: dict[str, str] = {}
                for member in unit:
                    chosen = best_node(member, trial, group)
                    if chosen is None:
                        break
                    placed[member.id] = chosen
                    for r in names:
                        trial[chosen][r] -= member.requests.get(r, 0)
                if len(placed) < len(unit):
                    continue
                d = dominant(unit[0])
                usable = [n for n in group if n.ready and not n.unschedulable and admits(n, unit[0])]
                leftover = sum(trial[n.id][d] for n in usable)
                value = group[0].labels.get(label, "") if label else ""
                if best is None or (leftover, value) < best[:2]:
                    best = (leftover, value, placed, trial)
            if best is None:
                return None
            free.update(best[3])  # noqa: B023
            return best[2]

        state = [_Queue(q, _units(q, jobs, pool, rejected | set(leases), default, config)) for q in queues]
        # Keys that fit on no node of the pool at the start are skipped up front.
        failed = {
            u[0].key(default) for q in state for u in q.units if best_node(u[0], free, pool_nodes) is None
        }
        while True:
            heads = []
            for q in state:
                q.units = [u for u in q.units if u[0].key(default) not in failed]
                if q.units:
                    after = {
                        r: q.alloc.get(r, 0) + sum(m.requests.get(r, 0) for m in q.units[0]) for r in names
                    }
                    heads.append(((share(after) + 0.0) / q.spec.priority_factor, q.spec.name, q))
            if not heads:
                break
            _, _, queue = min(heads, key=lambda h: (h[0], h[1]))
            unit = queue.units.pop(0)
            placed = place(unit)
            if placed is None:
                failed.add(unit[0].key(default))
                continue
            leases.update(placed)
            for member in unit:
                for r, units in member.requests.items():
                    queue.alloc[r] = queue.alloc.get(r, 0) + units
    return leases, rejected


def _units(
    queue: QueueSpec,
    jobs: list[JobRequirements],
    pool: str,
    excluded: set[str],
    default: str,
    config: SchedulingConfig,
) -> list[list[JobRequirements]]:
    mine = [(i, j) for i, j in enumerate(jobs) if j.queue == queue.name and j.id not in excluded]
    mine = [(i, j) for i, j in mine if not j.pools or pool in j.pools]
    order = sorted(mine, key=lambda p: (-config.priority_class(p[1].priority_class_name).priority,
                                        p[1].priority, p[1].submitted, p[0]))  # fmt: skip
    units: list[list[JobRequirements]] = []
    seen: set[str] = set()
    for _, j in order:
        if not j.gang_id:
            units.append([j])
        elif j.gang_id not in seen:
            seen.add(j.gang_id)
            members = [m for _, m in order if m.gang_id == j.gang_id]
            if len(members) >= j.gang_cardinality:
                units.append(sorted(members, key=lambda m: jobs.index(m))[: j.gang_cardinality])
    return units
