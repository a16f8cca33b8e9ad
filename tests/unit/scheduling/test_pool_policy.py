"""Per-pool policy (``scheduling.pools``): each pool's overrides hold in that pool only."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from armada.scheduling import SchedulingConfig, Taint, Toleration
from tests.unit.scheduling.helpers import Sim, job, node, unlimited

GPU = "nvidia.com/gpu"


def pools(*entries: dict[str, Any], **overrides: Any) -> SchedulingConfig:
    """``unlimited()`` with a ``pools`` list given as upstream YAML would be."""
    base = msgspec.to_builtins(unlimited(**overrides))
    return msgspec.convert({**base, "pools": list(entries)}, SchedulingConfig)


def two_pools(config: SchedulingConfig) -> Sim:
    return Sim(config, [node("a1", cpu=4, pool="a"), node("b1", cpu=4, pool="b")])


def test_an_upstream_pools_section_loads_and_unset_fields_take_the_global_defaults() -> None:
    config = pools(
        {
            "name": "gpu",
            "protectedFractionOfFairShare": 2.0,
            "dominantResourceFairnessResourcesToConsider": [
                {"name": "cpu"},
                {"name": GPU, "multiplier": 8},
            ],
            "disableGangAwayScheduling": True,
            "disablePreemptCrossPoolJobsFirst": False,
            "jobDefaults": {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
            "experimentalUnscheduledResources": ["example.com/licence"],
        },
        {"name": "cpu"},
    )
    assert config.protected_fraction("gpu") == 2.0
    assert config.protected_fraction("cpu") == config.protected_fraction("unlisted") == 1.0
    assert config.drf_multipliers("gpu") == {"cpu": 1.0, GPU: 8.0}
    assert config.drf_multipliers("cpu") == {"cpu": 1.0, "memory": 1.0, GPU: 1.0, "ephemeral-storage": 1.0}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("experimentalMarketScheduling", {"enabled": True}),
        ("experimentalOptimiser", {"enabled": True}),
        ("experimentalSubmissionGroup", "g"),
    ],
)
def test_an_upstream_key_not_implemented_is_refused_naming_it(key: str, value: object) -> None:
    with pytest.raises(msgspec.ValidationError, match=f"pools\\[gpu\\].{key}: .* not supported"):
        pools({"name": "gpu", key: value})


def test_an_unknown_pool_key_and_a_pool_twice_are_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `colour`"):
        pools({"name": "gpu", "colour": "green"})
    with pytest.raises(msgspec.ValidationError, match="configured twice"):
        pools({"name": "gpu"}, {"name": "gpu"})


def test_a_class_limit_by_pool_replaces_the_global_limit_in_that_pool_only() -> None:
    classes = {
        "armada-default": {
            "priority": 1000,
            "maximumResourceFractionPerQueue": {"cpu": 0.5},
            "maximumResourceFractionPerQueueByPool": {"b": {"cpu": 0.25}},
        }
    }
    sim = two_pools(unlimited(priority_classes=classes))
    sim.queue("q")
    sim.submit(job(f"j{i}", "q", pools=("a",)) for i in range(4))
    sim.submit(job(f"k{i}", "q", pools=("b",)) for i in range(4))
    leases = sim.cycle().leases
    assert sorted(lease.pool for lease in leases) == ["a", "a", "b"]


def test_multipliers_weigh_a_resource_in_the_dominant_share_of_that_pool() -> None:
    # One GPU of eight held by A is 1/8 of the pool; B holds 3/8 of its CPU. Plain DRF gives
    # the next job to A (2/8 < 4/8 after it); with GPUs counting 8x, A holds 8/8 and B goes first.
    def next_queue(config: SchedulingConfig) -> str:
        sim = Sim(config, [node("g", cpu=8, memory_gi=64, pool="gpu", extra={GPU: 8})])
        sim.queue("A")
        sim.queue("B")
        sim.submit([job("a0", "A", extra={GPU: 1}), job("b0", "B", cpu=3)])
        for running in ("a0", "b0"):
            sim.db.lease(running, "g", "gpu")
        sim.submit([job("a1", "A", cpu=1), job("b1", "B", cpu=1)])
        result = sim.cycle()
        assert len(result.leases) == 1  # the budget lets one job through per cycle
        return "A" if result.leases.job_ids == ["a1"] else "B"

    sized = {"maximum_resource_fraction_to_schedule": {"cpu": 0.13}}
    assert next_queue(unlimited(**sized)) == "A"
    weighted = pools(
        {
            "name": "gpu",
            "dominantResourceFairnessResourcesToConsider": ["cpu", {"name": GPU, "multiplier": 8}],
        },
        **sized,
    )
    assert next_queue(weighted) == "B"


def test_disabled_home_scheduling_and_unscheduled_resources_keep_jobs_out_of_a_pool() -> None:
    licence = "example.com/licence"
    config = pools(
        {"name": "a", "disableHomeScheduling": True},
        {"name": "b", "experimentalUnscheduledResources": [licence]},
    )
    sim = Sim(config, [node("a1", pool="a", extra={licence: 4}), node("b1", pool="b", extra={licence: 4})])
    sim.queue("q")
    sim.submit([job("plain", "q"), job("licensed", "q", extra={licence: 1})])
    result = sim.cycle()
    assert {lease.job_id: lease.pool for lease in result.leases} == {"plain": "b"}
    assert "licensed" not in {r.job_id for r in result.rejections}
    reason = result.reasons.for_job(sim.db, "licensed")
    assert "pool a: home scheduling disabled" in reason and "pool b" in reason, reason


def test_a_pools_default_tolerations_admit_its_tainted_nodes() -> None:
    taint = (Taint("nvidia.com/gpu", "present"),)
    config = pools(
        {"name": "gpu", "jobDefaults": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}
    )
    sim = Sim(config, [node("g1", pool="gpu", taints=taint), node("c1", pool="cpu", taints=taint)])
    sim.queue("q")
    sim.submit([job("j", "q")])
    result = sim.cycle()
    assert [(lease.job_id, lease.node_id) for lease in result.leases] == [("j", "g1")]
    assert config.pool_config("gpu").default_tolerations == (Toleration("nvidia.com/gpu", "Exists"),)


def test_disabled_fair_share_and_urgency_preemption_hold_in_their_pool() -> None:
    classes = {
        "armada-default": {"priority": 1000},
        "armada-preemptible": {"priority": 1000, "preemptible": True},
        "low": {"priority": 100, "preemptible": True},
    }
    config = pools(
        {"name": "a", "disableFairshareScheduling": True, "disableUrgencyScheduling": True},
        priority_classes=classes,
    )
    for pool, preempted in (("a", 0), ("b", 2)):
        sim = Sim(config, [node(f"{pool}1", cpu=4, pool=pool)])
        sim.queue("A")
        sim.queue("B")
        sim.submit(job(f"low{i}", "A", priority_class_name="low") for i in range(2))
        sim.submit(job(f"pre{i}", "A", priority_class_name="armada-preemptible") for i in range(2))
        sim.cycle()
        sim.submit(job(f"b{i}", "B", priority_class_name="armada-default") for i in range(2))
        assert len(sim.cycle().preemptions) == preempted, pool


def test_the_fair_share_preemption_rate_limit_bounds_preemptions_per_cycle_in_its_pool() -> None:
    limit = {"maximumRate": 1.0, "maximumBurst": 2}
    config = pools({"name": "a", "fairsharePreemptionRateLimit": limit})
    preempted: dict[str, list[int]] = {}
    for pool in ("a", "b"):
        sim = Sim(config, [node(f"{pool}1", cpu=10, memory_gi=64, pool=pool)])
        sim.queue("A")
        sim.queue("B")
        sim.submit(job(f"a{i}", "A", priority_class_name="armada-preemptible") for i in range(10))
        sim.cycle()
        sim.submit(job(f"b{i}", "B", priority_class_name="armada-preemptible") for i in range(10))
        results = [sim.cycle(advance=1.0) for _ in range(4)]
        preempted[pool] = [len(result.preemptions) for result in results]
        limited = any("preemption rate limit reached" in r for r in results[0].queue_summary.get("B", {}))
        assert limited == (pool == "a")
    # Unlimited: fair share (5 each) is restored at once. Limited: the burst of 2, then 1 a second.
    assert preempted == {"a": [2, 1, 1, 1], "b": [5, 0, 0, 0]}


@pytest.mark.parametrize(
    ("pool", "ended", "preempted", "split"),
    [
        ("a", 10.0, False, (2, 6)),  # ran 9 s of a 60 s cutoff: A is charged 4 CPUs until t=61
        ("a", 70.0, False, (4, 4)),  # ran longer than the cutoff: charged nothing
        ("a", 10.0, True, (4, 4)),  # preempted: never charged
        ("b", 10.0, False, (4, 4)),  # pool b has no cutoff
    ],
)
def test_a_short_job_is_charged_to_its_queue_until_the_cutoff(
    pool: str, ended: float, preempted: bool, split: tuple[int, int]
) -> None:
    config = pools({"name": "a", "shortJobPenaltyCutoff": "1m"})
    sim = Sim(config, [node("n", cpu=8, memory_gi=64, pool=pool)])
    sim.queue("A")
    sim.queue("B")
    sim.submit([job("short", "A", cpu=4)])
    sim.cycle()
    sim.db.started("short", 1.0)
    sim.db.remove("short", finished=None if preempted else ended)
    sim.now = ended
    sim.submit(job(f"a{i}", "A") for i in range(8))
    sim.submit(job(f"b{i}", "B") for i in range(8))
    result = sim.cycle()
    assert (sim.running("A"), sim.running("B")) == split
    # The penalty is reported as its dominant share of the pool (4 of 8 CPUs), 0 when none.
    assert result.shares[pool]["A"].short_job_penalty == (0.5 if split == (2, 6) else 0.0)


def test_a_floating_resource_is_bound_to_no_node_and_never_over_committed_in_its_pool() -> None:
    licence = "example.com/licence"
    base = msgspec.to_builtins(unlimited())
    floating = [{"name": licence, "resolution": "1", "pools": [{"name": "a", "quantity": 3}]}]
    config = msgspec.convert({**base, "floatingResources": floating}, SchedulingConfig)
    # Two clusters' nodes in pool a, none of which has the resource; pool b has none of it.
    sim = Sim(config, [node("x1", pool="a"), node("y1", pool="a"), node("b1", pool="b")])
    sim.queue("q")
    sim.submit(job(f"l{i}", "q", extra={licence: 1}, pools=("a",)) for i in range(5))
    sim.submit([job("big", "q", extra={licence: 4}), job("plain", "q")])
    first = sim.cycle()
    licensed = sorted(lease.job_id for lease in first.leases if lease.job_id.startswith("l"))
    assert licensed == ["l0", "l1", "l2"]
    assert {lease.node_id for lease in first.leases if lease.job_id.startswith("l")} <= {"x1", "y1"}
    assert "plain" in first.leases.job_ids
    assert [r.job_id for r in first.rejections] == ["big"]  # more than any pool has
    waiting = first.queue_summary["q"]
    assert any("floating resource example.com/licence exhausted" in reason for reason in waiting)
    assert len(sim.cycle().leases) == 0  # still held by the running jobs
    sim.db.remove("l0")
    assert [lease.job_id for lease in sim.cycle().leases] == ["l3"]
