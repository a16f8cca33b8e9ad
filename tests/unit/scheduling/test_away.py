"""Away scheduling: a pool's preemptible jobs borrow the idle capacity of its ``awayPools``
and give it back first when home jobs need it (upstream's semantics)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from armada.scheduling import PriorityClass, SchedulingConfig, Taint
from tests.unit.scheduling.helpers import Sim, job, node, unlimited

GPU = "nvidia.com/gpu"
GPU_TAINT = Taint(key=GPU, value="true", effect="NoSchedule")
CLASSES = {
    "armada-default": {"priority": 1000},
    "armada-preemptible": {"priority": 1000, "preemptible": True},
    "away": {
        "priority": 1000,
        "preemptible": True,
        "awayNodeTypes": [{"priority": 900, "wellKnownNodeTypeName": "gpu"}],
    },
}

#: The gpu pool's own jobs tolerate its taint (upstream's ``jobDefaults``).
GPU_POOL: dict[str, Any] = {
    "name": "gpu",
    "jobDefaults": {"tolerations": [{"key": GPU, "operator": "Exists"}]},
}


def away_config(*pool_entries: dict[str, Any], **overrides: Any) -> SchedulingConfig:
    """Pool ``cpu`` borrows from pool ``gpu`` (tainted nodes); class ``away`` may go away."""
    base = msgspec.to_builtins(unlimited(**overrides))
    entries = list(pool_entries) or [{"name": "cpu", "awayPools": ["gpu"]}, GPU_POOL]
    return msgspec.convert(
        {
            **base,
            "priorityClasses": CLASSES,
            "wellKnownNodeTypes": [{"name": "gpu", "taints": [msgspec.to_builtins(GPU_TAINT)]}],
            "pools": entries,
        },
        SchedulingConfig,
    )


def fleet(config: SchedulingConfig, gpu_nodes: int = 1) -> Sim:
    nodes = [node("c1", cpu=2, pool="cpu")]
    nodes += [node(f"g{i}", cpu=4, pool="gpu", extra={GPU: 2}, taints=(GPU_TAINT,)) for i in range(gpu_nodes)]
    sim = Sim(config, nodes)
    sim.queue("A")
    sim.queue("B")
    return sim


def cpu_jobs(prefix: str, count: int, pc: str = "away", **kw: Any) -> list[Any]:
    return [job(f"{prefix}{i}", "A", pools=("cpu",), priority_class_name=pc, **kw) for i in range(count)]


def gpu_jobs(prefix: str, count: int, pc: str = "armada-default") -> list[Any]:
    return [
        job(f"{prefix}{i}", "B", pools=("gpu",), priority_class_name=pc, extra={GPU: 1}) for i in range(count)
    ]


def placed(result: Any) -> dict[str, str]:
    return {lease.job_id: lease.node_id for lease in result.leases}


def test_preemptible_jobs_borrow_idle_capacity_of_the_away_pool_after_filling_home() -> None:
    sim = fleet(away_config())
    sim.submit(cpu_jobs("a", 6))
    result = sim.cycle()
    nodes = placed(result)
    assert sorted(nodes.values()) == ["c1", "c1", "g0", "g0", "g0", "g0"]
    # The run belongs to the home pool (upstream's run pool); the away pool shows the share.
    assert {lease.pool for lease in result.leases} == {"cpu"}
    assert sim.cycle().shares["gpu"]["A-away"].actual_share == pytest.approx(1.0)


def test_only_classes_with_away_node_types_go_away() -> None:
    sim = fleet(away_config())
    sim.submit(cpu_jobs("p", 4, pc="armada-preemptible"))
    result = sim.cycle()
    assert sorted(placed(result).values()) == ["c1", "c1"]
    assert "p2" not in placed(result)


def test_home_jobs_reclaim_away_capacity_away_jobs_first_with_the_reason() -> None:
    sim = fleet(away_config())
    sim.submit(cpu_jobs("a", 6))
    sim.cycle()
    sim.submit(gpu_jobs("h", 2))
    result = sim.cycle()
    assert sorted(placed(result)) == ["h0", "h1"]
    assert len(result.preemptions) == 2
    for p in result.preemptions:
        assert p.reason == f"pool gpu: away capacity reclaimed by job {p.preempted_by}"
        assert p.pool == "gpu"
        assert p.preempted_by in ("h0", "h1")
    # Never make home jobs wait: in the next cycle nothing more is preempted, nothing waits.
    assert sim.cycle().preemptions == []


def test_away_jobs_go_before_preemptible_home_jobs_unless_cross_pool_first_is_disabled() -> None:
    for disabled, victims in ((False, {"a1", "a2"}), (True, {"low0"})):
        config = away_config(
            {"name": "cpu", "awayPools": ["gpu"]},
            {**GPU_POOL, "disablePreemptCrossPoolJobsFirst": disabled},
        )
        classes = {**CLASSES, "low": {"priority": 100, "preemptible": True}}
        config = msgspec.structs.replace(
            config, priority_classes=msgspec.convert(classes, dict[str, PriorityClass])
        )
        sim = fleet(config)
        sim.submit([job("low0", "B", pools=("gpu",), priority_class_name="low")])
        sim.cycle()  # low0 takes 1 CPU of g0
        sim.submit(cpu_jobs("a", 3, cpu=1.5))  # c1 holds one; two borrow g0's remaining 3 CPUs
        assert len(sim.cycle().leases) == 3
        sim.submit(gpu_jobs("h", 1))
        sim.db.add(job("h1", "B", pools=("gpu",), cpu=1, extra={GPU: 1}))
        result = sim.cycle()
        assert {p.job_id for p in result.preemptions} == victims, disabled
        if disabled:
            assert not any("away capacity" in p.reason for p in result.preemptions)


@pytest.mark.parametrize(
    ("entry", "gang_placed", "single_placed"),
    [
        ({"name": "cpu", "awayPools": ["gpu"]}, True, True),
        ({"name": "cpu", "awayPools": ["gpu"], "disableAwayScheduling": True}, False, False),
        ({"name": "cpu", "awayPools": ["gpu"], "disableGangAwayScheduling": True}, False, True),
    ],
)
def test_disable_flags_of_the_home_pool_hold(
    entry: dict[str, Any], gang_placed: bool, single_placed: bool
) -> None:
    sim = fleet(away_config(entry, GPU_POOL), gpu_nodes=2)
    sim.submit(cpu_jobs("fill", 2))  # the home node is full
    sim.cycle()
    gang = [
        job(
            f"g{i}",
            "A",
            pools=("cpu",),
            priority_class_name="away",
            cpu=3,
            gang_id="gang",
            gang_cardinality=2,
        )
        for i in range(2)
    ]
    sim.submit(gang)
    sim.submit(cpu_jobs("s", 1))
    nodes = placed(sim.cycle())
    assert ("g0" in nodes and "g1" in nodes) == gang_placed
    assert ("g0" in nodes) == ("g1" in nodes)  # all or nothing
    assert ("s0" in nodes) == single_placed


def test_disable_home_scheduling_leaves_the_pool_to_away_jobs() -> None:
    sim = fleet(
        away_config({"name": "cpu", "awayPools": ["gpu"]}, {**GPU_POOL, "disableHomeScheduling": True})
    )
    sim.submit(gpu_jobs("h", 1))
    sim.submit(cpu_jobs("a", 3))
    nodes = placed(sim.cycle())
    assert "h0" not in nodes
    assert sorted(nodes) == ["a0", "a1", "a2"]


def test_away_jobs_never_take_capacity_leased_at_home_in_the_same_cycle() -> None:
    sim = fleet(away_config())
    sim.submit(gpu_jobs("h", 2))  # 2 CPUs and both GPUs of g0
    sim.submit(cpu_jobs("a", 8))
    nodes = placed(sim.cycle())
    assert sum(1 for n in nodes.values() if n == "g0") == 2 + 2  # two home jobs, two away
    assert sim.cycle().preemptions == []


def test_away_jobs_are_not_fair_share_evicted_as_the_away_pool_queues_own_jobs() -> None:
    sim = fleet(away_config())
    sim.submit(cpu_jobs("a", 6))
    sim.cycle()
    # Queue A also gets home work in gpu: its away jobs there are not its gpu allocation.
    sim.submit([job("ag", "A", pools=("gpu",), priority_class_name="armada-preemptible", extra={GPU: 1})])
    result = sim.cycle()
    assert all("fair share" not in p.reason for p in result.preemptions)


def test_away_node_types_must_name_a_known_type_and_a_preemptible_class() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"awayNodeTypes\[0\].wellKnownNodeTypeName: 'tpu'"):
        msgspec.convert(
            {
                "priorityClasses": {
                    **CLASSES,
                    "x": {
                        "preemptible": True,
                        "awayNodeTypes": [{"priority": 1, "wellKnownNodeTypeName": "tpu"}],
                    },
                },
                "wellKnownNodeTypes": [{"name": "gpu"}],
            },
            SchedulingConfig,
        )
    with pytest.raises(
        msgspec.ValidationError, match=r"priorityClasses.x.awayNodeTypes: the class is not preemptible"
    ):
        msgspec.convert(
            {
                "priorityClasses": {
                    **CLASSES,
                    "x": {"awayNodeTypes": [{"priority": 1, "wellKnownNodeTypeName": "gpu"}]},
                },
                "wellKnownNodeTypes": [{"name": "gpu"}],
            },
            SchedulingConfig,
        )
    with pytest.raises(msgspec.ValidationError, match=r"pools\[cpu\].awayPools: a pool cannot be its own"):
        away_config({"name": "cpu", "awayPools": ["cpu"]})
