"""Hypothesis properties over random clusters and workloads, and the reference comparison."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada.scheduling import (
    JobRequirements,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSpec,
    QueueSpec,
    SchedulingConfig,
    SchedulingResult,
    Taint,
    Toleration,
)
from armada.scheduling.config import PREEMPTIBLE_PRIORITY_CLASS
from armada.scheduling.schedule import apply_decisions, schedule
from tests.unit.scheduling.helpers import GI, Sim, unlimited
from tests.unit.scheduling.reference import admits, reference_schedule

GPU = "nvidia.com/gpu"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def nodes(draw: st.DrawFn) -> list[NodeSpec]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        gpu = draw(st.sampled_from([0, 0, 2]))
        allocatable = {
            "cpu": draw(st.sampled_from([2, 4, 8])) * 1000,
            "memory": draw(st.sampled_from([4, 8, 16])) * GI,
        }
        if gpu:
            allocatable[GPU] = gpu
        ready, unschedulable = draw(st.sampled_from([(True, False)] * 6 + [(False, False), (True, True)]))
        out.append(
            NodeSpec(
                id=f"node-{i}",
                pool=draw(st.sampled_from(["p1", "p1", "p2"])),
                labels={"zone": draw(st.sampled_from(["a", "b"])), "rank": str(i)},
                taints=(Taint("dedicated", "x", "NoSchedule"),) if draw(st.integers(0, 4)) == 0 else (),
                allocatable=allocatable,
                non_armada_allocated={"cpu": draw(st.sampled_from([0, 0, 500]))},
                ready=ready,
                unschedulable=unschedulable,
            )
        )
    return out


AFFINITIES = [
    (),
    (NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("a",)),)),),
    (NodeSelectorTerm((NodeSelectorRequirement("rank", "Gt", ("1",)),)),),
    (
        NodeSelectorTerm((NodeSelectorRequirement("zone", "NotIn", ("a",)),)),
        NodeSelectorTerm((NodeSelectorRequirement("rank", "Lt", ("1",)),)),
    ),
    (
        NodeSelectorTerm(
            (NodeSelectorRequirement("gpu", "DoesNotExist"), NodeSelectorRequirement("zone", "Exists"))
        ),
    ),
]


@st.composite
def workloads(draw: st.DrawFn, gangs: bool = True) -> list[JobRequirements]:
    jobs: list[JobRequirements] = []
    for i in range(draw(st.integers(0, 40))):
        requests = {
            "cpu": draw(st.sampled_from([500, 1000, 2000, 3000])),
            "memory": draw(st.sampled_from([1, 2, 4])) * GI,
        }
        if draw(st.integers(0, 5)) == 0:
            requests[GPU] = 1
        size = draw(st.sampled_from([1] * 6 + [2, 3])) if gangs else 1
        gang_id = f"gang-{i}" if size > 1 else ""
        members = size - (1 if size > 1 and draw(st.integers(0, 4)) == 0 else 0)  # some gangs incomplete
        common = {
            "queue": draw(st.sampled_from(["qa", "qb", "qc"])),
            "requests": requests,
            "priority": float(draw(st.sampled_from([0, 0, 1]))),
            "node_selector": draw(st.sampled_from([{}, {}, {"zone": "a"}, {"zone": "b"}])),
            "tolerations": draw(st.sampled_from([(), (), (Toleration("dedicated", "Exists"),)])),
            "affinity": draw(st.sampled_from(AFFINITIES)),
            "pools": draw(st.sampled_from([(), (), ("p2",), ("p1",)])),
            "gang_id": gang_id,
            "gang_cardinality": size,
            "gang_node_uniformity_label": draw(st.sampled_from(["", "zone"])) if gang_id else "",
        }
        for m in range(members):
            jobs.append(JobRequirements(id=f"j{i}-{m}", submitted=float(i), **common))  # type: ignore[arg-type]
    return jobs


QUEUES = [QueueSpec("qa", 1.0), QueueSpec("qb", 2.0), QueueSpec("qc", 3.0)]


def run(
    cluster: list[NodeSpec],
    jobs: list[JobRequirements],
    max_leases: int | None = None,
    config: SchedulingConfig | None = None,
) -> tuple[Sim, SchedulingResult]:
    sim = Sim(config or unlimited(), nodes=cluster)
    for q in QUEUES:
        sim.queue(q.name, q.priority_factor)
    sim.submit(jobs)
    return sim, sim.cycle(apply=False, max_leases=max_leases)


@SETTINGS
@given(nodes(), workloads())
def test_matches_reference_implementation(cluster: list[NodeSpec], jobs: list[JobRequirements]) -> None:
    _, result = run(cluster, jobs)
    expected, rejected = reference_schedule(cluster, jobs, QUEUES, unlimited())
    assert dict(zip(result.leases.job_ids, result.leases.node_ids, strict=True)) == expected
    assert {r.job_id for r in result.rejections} == rejected


@st.composite
def pool_policies(draw: st.DrawFn) -> SchedulingConfig:
    """Random ``scheduling.pools`` entries for the pools of :func:`nodes`."""
    entries = []
    for name in ("p1", "p2"):
        entry: dict[str, Any] = {"name": name}
        if draw(st.booleans()):
            entry["dominantResourceFairnessResourcesToConsider"] = [
                {"name": "cpu", "multiplier": draw(st.sampled_from([1, 3]))},
                {"name": "memory", "multiplier": draw(st.sampled_from([1, 2]))},
                {"name": "nvidia.com/gpu", "multiplier": draw(st.sampled_from([1, 8]))},
            ]
        entry["disableHomeScheduling"] = draw(st.sampled_from([False, False, False, True]))
        if draw(st.integers(0, 3)) == 0:
            entry["experimentalUnscheduledResources"] = ["nvidia.com/gpu"]
        if draw(st.integers(0, 2)) == 0:
            entry["jobDefaults"] = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
        entries.append(entry)
    return msgspec.convert({**msgspec.to_builtins(unlimited()), "pools": entries}, SchedulingConfig)


@st.composite
def away_policies(draw: st.DrawFn) -> SchedulingConfig:
    """Pools that borrow from each other (``awayPools`` and its disable flags), a class
    ``away`` whose jobs may borrow nodes tainted ``dedicated``, and a pool's job defaults."""
    entries = []
    for name, other in (("p1", "p2"), ("p2", "p1")):
        entry: dict[str, Any] = {"name": name}
        if draw(st.sampled_from([True, True, False])):
            entry["awayPools"] = [other]
            entry["disableAwayScheduling"] = draw(st.sampled_from([False, False, True]))
            entry["disableGangAwayScheduling"] = draw(st.booleans())
        if draw(st.integers(0, 3)) == 0:
            entry["jobDefaults"] = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
        entries.append(entry)
    classes = {
        **msgspec.to_builtins(unlimited().priority_classes),
        "away": {
            "priority": 1000,
            "preemptible": True,
            "awayNodeTypes": [{"priority": 900, "wellKnownNodeTypeName": "dedicated"}],
        },
    }
    return msgspec.convert(
        {
            **msgspec.to_builtins(unlimited()),
            "priorityClasses": classes,
            "wellKnownNodeTypes": [{"name": "dedicated", "taints": [{"key": "dedicated", "value": "x"}]}],
            "pools": entries,
        },
        SchedulingConfig,
    )


@SETTINGS
@given(
    nodes(),
    workloads(),
    away_policies(),
    st.lists(st.booleans(), min_size=40, max_size=40),
    st.lists(st.sampled_from([True, True, False]), min_size=6, max_size=6),
)
def test_matches_reference_with_away_pools(
    cluster: list[NodeSpec],
    jobs: list[JobRequirements],
    config: SchedulingConfig,
    goes_away: list[bool],
    tainted: list[bool],
) -> None:
    """Some jobs are of class ``away``; many nodes carry the taint only away turns tolerate."""
    taint = (Taint("dedicated", "x", "NoSchedule"),)
    cluster = [
        msgspec.structs.replace(n, taints=taint) if t else n for n, t in zip(cluster, tainted, strict=False)
    ]
    gangs = {j.gang_id for j, away in zip(jobs, goes_away, strict=False) if away and j.gang_id}
    jobs = [
        msgspec.structs.replace(j, priority_class_name="away") if away or j.gang_id in gangs else j
        for j, away in zip(jobs, goes_away, strict=False)
    ]
    _, result = run(cluster, jobs, config=config)
    expected, rejected = reference_schedule(cluster, jobs, QUEUES, config)
    assert dict(zip(result.leases.job_ids, result.leases.node_ids, strict=True)) == expected
    assert {r.job_id for r in result.rejections} == rejected


#: Short-job penalties a queue may still be charged: (queue, pool, millicores).
CHARGES = st.lists(
    st.tuples(
        st.sampled_from(["qa", "qb", "qc"]), st.sampled_from(["p1", "p2"]), st.sampled_from([500, 4000])
    ),
    max_size=3,
)


@SETTINGS
@given(nodes(), workloads(), pool_policies(), CHARGES)
def test_matches_reference_with_pool_policies(
    cluster: list[NodeSpec],
    jobs: list[JobRequirements],
    config: SchedulingConfig,
    charges: list[tuple[str, str, int]],
) -> None:
    sim = Sim(config, nodes=cluster)
    for q in QUEUES:
        sim.queue(q.name, q.priority_factor)
    sim.submit(jobs)
    charged: dict[tuple[str, str], dict[str, int]] = {}
    for queue, pool, cpu in charges:
        request = sim.db.resources.vector({"cpu": cpu})
        sim.db.penalties.charge(sim.db.queue_index(queue), pool, request, until=10.0)
        total = charged.setdefault((queue, pool), {})
        total["cpu"] = total.get("cpu", 0) + cpu
    result = sim.cycle(apply=False)
    expected, rejected = reference_schedule(cluster, jobs, QUEUES, config, charged)
    assert dict(zip(result.leases.job_ids, result.leases.node_ids, strict=True)) == expected
    assert {r.job_id for r in result.rejections} == rejected


@SETTINGS
@given(nodes(), workloads())
def test_safety_properties(cluster: list[NodeSpec], jobs: list[JobRequirements]) -> None:
    sim, result = run(cluster, jobs)
    by_id = {j.id: j for j in jobs}
    by_node = {n.id: n for n in cluster}
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for lease in result.leases:
        job, node = by_id[lease.job_id], by_node[lease.node_id]
        assert admits(node, job) and node.ready and not node.unschedulable
        for r, units in job.requests.items():
            used[node.id][r] += units
    for node_id, resources in used.items():
        node = by_node[node_id]
        for r, units in resources.items():
            assert units <= node.allocatable.get(r, 0) - node.non_armada_allocated.get(r, 0)
    leased = set(result.leases.job_ids)
    gangs: dict[str, list[JobRequirements]] = defaultdict(list)
    for j in jobs:
        if j.gang_id:
            gangs[j.gang_id].append(j)
    node_of = dict(zip(result.leases.job_ids, result.leases.node_ids, strict=True))
    for members in gangs.values():
        placed = [m for m in members if m.id in leased]
        assert len(placed) in (0, members[0].gang_cardinality)
        label = members[0].gang_node_uniformity_label
        if placed and label:
            assert len({by_node[node_of[m.id]].labels.get(label) for m in placed}) == 1
    # Work conservation: a waiting single job never fits anywhere it is allowed afterwards.
    rejected = {r.job_id for r in result.rejections}
    for j in jobs:
        if j.gang_id or j.id in leased or j.id in rejected:
            continue
        for node in cluster:
            if node.ready and not node.unschedulable and admits(node, j):
                free = {
                    r: node.allocatable.get(r, 0) - node.non_armada_allocated.get(r, 0) - used[node.id][r]
                    for r in j.requests
                }
                assert any(free[r] < units for r, units in j.requests.items()), (j.id, node.id)
        assert result.reasons.for_job(sim.db, j.id)


@SETTINGS
@given(nodes(), workloads(), st.integers(0, 12))
def test_a_lease_cap_bounds_the_cycle_and_keeps_gangs_whole(
    cluster: list[NodeSpec], jobs: list[JobRequirements], cap: int
) -> None:
    _, result = run(cluster, jobs, max_leases=cap)
    assert len(result.leases) <= cap
    leased = set(result.leases.job_ids)
    gangs: dict[str, list[JobRequirements]] = defaultdict(list)
    for j in jobs:
        if j.gang_id:
            gangs[j.gang_id].append(j)
    for members in gangs.values():
        assert len([m for m in members if m.id in leased]) in (0, members[0].gang_cardinality)


@SETTINGS
@given(nodes(), workloads(), workloads(gangs=False))
def test_decisions_do_not_depend_on_explanations(
    cluster: list[NodeSpec], first: list[JobRequirements], later: list[JobRequirements]
) -> None:
    """Simulations schedule with ``explain=False`` (a pool's turn ends once nothing fits): cycle
    after cycle, the live cycle's decisions, urgency preemptions of a preemptible first wave
    included."""
    sim = Sim(unlimited(), nodes=cluster)
    for q in QUEUES:
        sim.queue(q.name, q.priority_factor)
    sim.submit(msgspec.structs.replace(j, priority_class_name=PREEMPTIBLE_PRIORITY_CLASS) for j in first)
    for wave in ((), [msgspec.structs.replace(j, id=f"late-{j.id}") for j in later], ()):
        sim.submit(wave)
        sim.now += 1.0
        given_state = {"queues": list(sim.queues.values()), "config": sim.config, "state": sim.state}
        live = schedule(sim.db, now=sim.now, **given_state)  # type: ignore[arg-type]
        quiet = schedule(sim.db, now=sim.now, explain=False, **given_state)  # type: ignore[arg-type]
        assert quiet.leases == live.leases
        assert (quiet.preemptions, quiet.rejections) == (live.preemptions, live.rejections)
        assert (quiet.shares, quiet.state) == (live.shares, live.state)
        apply_decisions(sim.db, live)
        sim.state = live.state


@SETTINGS
@given(nodes(), workloads())
def test_deterministic(cluster: list[NodeSpec], jobs: list[JobRequirements]) -> None:
    first, second = run(cluster, jobs)[1], run(cluster, jobs)[1]
    assert first.leases == second.leases
    assert first.rejections == second.rejections
    assert first.reasons == second.reasons


@SETTINGS
@given(
    st.lists(st.sampled_from([1.0, 2.0, 3.0, 5.0]), min_size=2, max_size=4),
    st.integers(1, 8),
    st.sampled_from([(1, 1), (2, 1), (1, 4)]),
)
def test_shares_track_weights(weights: list[float], node_count: int, size: tuple[int, int]) -> None:
    cpu, memory = size
    sim = Sim(
        unlimited(),
        nodes=[
            NodeSpec(id=f"n{i}", allocatable={"cpu": 16000, "memory": 64 * GI}) for i in range(node_count)
        ],
    )
    for q, weight in enumerate(weights):
        sim.queue(f"q{q}", weight)
        requests = {"cpu": cpu * 1000, "memory": memory * GI}
        sim.submit(
            JobRequirements(id=f"q{q}-{i}", queue=f"q{q}", requests=requests, submitted=i) for i in range(200)
        )
    result = sim.cycle(apply=False)
    shares = result.shares["default"]
    one_job = max(cpu * 1000 / (16000 * node_count), memory / (64 * node_count))
    # DRF invariant: no queue's cost exceeds another's cost after one more job.
    for a, wa in enumerate(weights):
        for b, wb in enumerate(weights):
            assert shares[f"q{a}"].actual_share / wa <= (shares[f"q{b}"].actual_share + one_job) / wb + 1e-9


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(15, 40))
def test_bulk_fused_placement_is_safe_and_work_conserving(seed: int, node_count: int) -> None:
    """Hundreds of interleaved jobs of a few keys exercise the fused bulk path."""
    rng = random.Random(seed)
    cluster = [
        NodeSpec(id=f"n{i:02d}", labels={"zone": "ab"[i % 2]}, allocatable={"cpu": 64000, "memory": 256 * GI})
        for i in range(node_count)
    ]
    jobs: list[JobRequirements] = []
    for i in range(900):
        cpu, selector = rng.choice([(1000, {}), (2000, {}), (1000, {"zone": "a"}), (4000, {})])
        size = 2 if rng.random() < 0.1 else 1
        jobs.extend(
            JobRequirements(
                id=f"j{i}-{m}",
                queue=rng.choice(["qa", "qb", "qc"]) if size == 1 else "qa",
                requests={"cpu": cpu, "memory": GI},
                node_selector=selector,
                submitted=float(i),
                gang_id=f"g{i}" if size > 1 else "",
                gang_cardinality=size,
            )
            for m in range(size)
        )
    _, result = run(cluster, jobs)
    used: dict[str, int] = defaultdict(int)
    by_id = {j.id: j for j in jobs}
    for lease in result.leases:
        used[lease.node_id] += by_id[lease.job_id].requests["cpu"]
        assert admits({n.id: n for n in cluster}[lease.node_id], by_id[lease.job_id])
    assert all(units <= 64000 for units in used.values())
    leased = set(result.leases.job_ids)
    for j in jobs:
        if j.gang_id:
            assert (f"{j.gang_id}-0" in leased) == (f"{j.gang_id}-1" in leased)
        elif j.id not in leased:
            fits = [n for n in cluster if admits(n, j) and 64000 - used[n.id] >= j.requests["cpu"]]
            assert not fits, j.id


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from([1.0, 2.0, 4.0]), st.sampled_from([1, 2, 3, 5])), min_size=2, max_size=4
    ),
    st.integers(1, 4),
)
def test_no_queue_starves_while_its_job_would_fit(queues: list[tuple[float, int]], node_count: int) -> None:
    """A queue left with nothing has no job that fits anywhere, however others fared."""
    cluster = [NodeSpec(id=f"n{i}", allocatable={"cpu": 8000, "memory": 64 * GI}) for i in range(node_count)]
    sim = Sim(unlimited(), nodes=cluster)
    for q, (weight, cpu) in enumerate(queues):
        sim.queue(f"q{q}", weight)
        requests = {"cpu": cpu * 1000, "memory": GI}
        sim.submit(JobRequirements(id=f"q{q}-{i}", queue=f"q{q}", requests=requests) for i in range(30))
    result = sim.cycle(apply=False)
    used: dict[str, int] = defaultdict(int)
    for lease in result.leases:
        used[lease.node_id] += queues[int(lease.job_id[1 : lease.job_id.index("-")])][1] * 1000
    got = {lease.job_id.split("-")[0] for lease in result.leases}
    for q, (_, cpu) in enumerate(queues):
        if f"q{q}" not in got and cpu * 1000 <= 8000:
            assert all(8000 - used[n.id] < cpu * 1000 for n in cluster), (q, dict(used))
