"""Multi-cycle properties with preemption: never over-allocate, gangs stay whole, blame is named."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada.scheduling import RUNNING, JobRequirements, NodeSpec
from tests.unit.scheduling.helpers import GI, Sim, unlimited

CLASSES = {
    "low": {"priority": 100, "preemptible": True},
    "mid": {"priority": 500, "preemptible": True},
    "high": {"priority": 1000, "preemptible": False},
}


def draw_batch(draw: st.DrawFn, queues: list[str], units: int, first: int) -> list[JobRequirements]:
    """``units`` jobs or gangs of ``queues``, numbered (and submitted) from ``first``."""
    batch: list[JobRequirements] = []
    for n in range(first, first + units):
        size = draw(st.sampled_from([1, 1, 1, 2]))
        common = {
            "queue": draw(st.sampled_from(queues)),
            "requests": {"cpu": draw(st.sampled_from([1000, 2000, 3000])), "memory": GI},
            "priority_class_name": draw(st.sampled_from(["low", "low", "mid", "high"])),
            "gang_id": f"g{n}" if size > 1 else "",
            "gang_cardinality": size,
            "submitted": float(n),
        }
        batch.extend(JobRequirements(id=f"j{n}-{m}", **common) for m in range(size))  # type: ignore[arg-type]
    return batch


@st.composite
def rounds(draw: st.DrawFn) -> list[list[JobRequirements]]:
    out = []
    n = 0
    for _ in range(draw(st.integers(1, 4))):
        units = draw(st.integers(0, 25))
        out.append(draw_batch(draw, ["qa", "qb", "qc"], units, n))
        n += units
    return out


@st.composite
def burst_then_reclaim(draw: st.DrawFn) -> list[list[JobRequirements]]:
    """``qa`` alone fills the cluster with jobs of every class, then the others come for
    their share: the shape in which fair share evicts."""
    burst = draw(st.integers(1, 25))
    return [
        draw_batch(draw, ["qa"], burst, 0),
        draw_batch(draw, ["qb", "qc"], draw(st.integers(1, 25)), burst),
    ]


def check_cluster(sim: Sim, cluster: list[NodeSpec]) -> None:
    db = sim.db
    used: dict[str, int] = defaultdict(int)
    running_per_gang: dict[int, int] = defaultdict(int)
    for row, job_id in enumerate(db.ids):
        if job_id is None or db.cols["state"][row] != RUNNING:
            continue
        used[db.node_of(job_id) or ""] += int(db.keys.request(int(db.cols["key"][row]))[0])
        if db.gang_of(row) >= 0:
            running_per_gang[db.gang_of(row)] += 1
    for node in cluster:
        assert used[node.id] <= node.allocatable["cpu"]
    for gang, count in running_per_gang.items():
        info = db.gangs[gang]
        assert info is not None
        cardinality = db.keys.infos[int(db.cols["key"][info.members[0]])].gang_cardinality
        assert count == cardinality


def three_queues(nodes: int, protected: float) -> tuple[list[NodeSpec], Sim]:
    """``nodes`` 4-CPU nodes and queues qa, qb (weight 2) and qc, every class preemptible or not."""
    cluster = [NodeSpec(id=f"n{i}", allocatable={"cpu": 4000, "memory": 16 * GI}) for i in range(nodes)]
    config = unlimited(
        priority_classes=CLASSES,
        default_priority_class_name="high",
        protected_fraction_of_fair_share=protected,
    )
    sim = Sim(config, nodes=cluster)
    for name, factor in (("qa", 1.0), ("qb", 2.0), ("qc", 1.0)):
        sim.queue(name, factor)
    return cluster, sim


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds(), st.integers(1, 4), st.sampled_from([0.5, 1.0, 2.0]))
def test_preemption_keeps_cluster_consistent(
    batches: list[list[JobRequirements]], nodes: int, protected: float
) -> None:
    cluster, sim = three_queues(nodes, protected)
    for batch in [*batches, []]:
        sim.submit(batch)
        before = {j: sim.db.state(j) for j in sim.db.ids if j is not None}
        result = sim.cycle()
        leased = set(result.leases.job_ids)
        for p in result.preemptions:
            assert before[p.job_id] == RUNNING
            # no thrash: a job only loses its place to a job that was leased instead
            assert p.preempted_by in leased, p
        check_cluster(sim, cluster)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(burst_then_reclaim(), st.integers(1, 4), st.sampled_from([0.5, 1.0]))
def test_a_non_preemptible_job_is_never_evicted_by_fair_share(
    batches: list[list[JobRequirements]], nodes: int, protected: float
) -> None:
    _, sim = three_queues(nodes, protected)
    fixed = {j.id for batch in batches for j in batch if not CLASSES[j.priority_class_name]["preemptible"]}
    for batch in [*batches, []]:
        sim.submit(batch)
        running = {j for j in sim.db.ids if j in fixed and sim.db.state(j) == RUNNING}
        result = sim.cycle()
        assert not fixed & {p.job_id for p in result.preemptions}
        assert all(sim.db.state(j) == RUNNING for j in running)
