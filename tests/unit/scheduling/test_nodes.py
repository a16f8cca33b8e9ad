"""Node database: in-place updates and vectorised constraint matching."""

from __future__ import annotations

import numpy as np

from armada.model.resources import ResourceIndex
from armada.scheduling import (
    JobRequirements,
    NodeDb,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSpec,
    Taint,
    Toleration,
)
from armada.scheduling.nodes import UNLIMITED_PODS


def db() -> NodeDb:
    nodes = NodeDb(ResourceIndex())
    nodes.upsert(NodeSpec(id="b", pool="p", labels={"zone": "a", "size": "4"}, allocatable={"cpu": 4000}))
    nodes.upsert(
        NodeSpec(
            id="a",
            pool="p",
            labels={"zone": "b", "size": "16"},
            allocatable={"cpu": 16000},
            taints=(Taint("gpu", "yes", "NoSchedule"), Taint("soft", "", "PreferNoSchedule")),
        )
    )
    nodes.upsert(
        NodeSpec(
            id="c",
            pool="q",
            labels={"gpu": "a100"},
            allocatable={"cpu": 1000, "nvidia.com/gpu": 8},
            taints=(Taint("gpu", "", "NoExecute"),),
        )
    )
    return nodes


def term(*expressions: NodeSelectorRequirement) -> NodeSelectorTerm:
    return NodeSelectorTerm(expressions)


def matching(
    nodes: NodeDb,
    *,
    selector: dict[str, str] | None = None,
    tolerations: tuple[Toleration, ...] = (),
    affinity: tuple[NodeSelectorTerm, ...] = (),
) -> list[str]:
    mask = nodes.constraint_mask(tuple(sorted((selector or {}).items())), tolerations, affinity)
    return sorted(nodes.ids[i] for i in np.flatnonzero(mask))


def test_selectors_and_taints() -> None:
    nodes = db()
    assert matching(nodes) == ["b"]
    assert matching(nodes, tolerations=(Toleration("gpu", "Exists"),)) == ["a", "b", "c"]
    assert matching(nodes, tolerations=(Toleration("gpu", "Equal", "yes"),)) == ["a", "b"]
    assert matching(nodes, tolerations=(Toleration("gpu", "Exists", effect="NoExecute"),)) == ["b", "c"]
    assert matching(nodes, tolerations=(Toleration(operator="Exists"),), selector={"zone": "b"}) == ["a"]
    assert matching(nodes, selector={"zone": "c"}) == []


def test_required_affinity_operators() -> None:
    nodes = db()
    everything = (Toleration(operator="Exists"),)

    def expr(key: str, op: str, *values: str) -> tuple[NodeSelectorTerm, ...]:
        return (term(NodeSelectorRequirement(key, op, values)),)  # type: ignore[arg-type]

    assert matching(nodes, tolerations=everything, affinity=expr("zone", "In", "a", "b")) == ["a", "b"]
    assert matching(nodes, tolerations=everything, affinity=expr("zone", "NotIn", "a")) == ["a", "c"]
    assert matching(nodes, tolerations=everything, affinity=expr("gpu", "Exists")) == ["c"]
    assert matching(nodes, tolerations=everything, affinity=expr("gpu", "DoesNotExist")) == ["a", "b"]
    assert matching(nodes, tolerations=everything, affinity=expr("size", "Gt", "8")) == ["a"]
    assert matching(nodes, tolerations=everything, affinity=expr("size", "Lt", "8")) == ["b"]
    assert matching(nodes, tolerations=everything, affinity=expr("size", "Gt", "x")) == []
    either = (*expr("size", "Lt", "8"), *expr("gpu", "Exists"))
    assert matching(nodes, tolerations=everything, affinity=either) == ["b", "c"]
    assert matching(nodes, tolerations=everything, affinity=(term(),)) == []


def test_updates_in_place_and_pools_ordered_by_id() -> None:
    nodes = db()
    assert {p: [nodes.ids[r] for r in rows] for p, rows in nodes.pool_rows().items()} == {
        "p": ["a", "b"],
        "q": ["c"],
    }
    version = nodes.version
    nodes.upsert(NodeSpec(id="b", pool="p", labels={"zone": "a", "size": "4"}, allocatable={"cpu": 4000}))
    assert nodes.version == version  # identical re-report
    nodes.upsert(
        NodeSpec(
            id="b",
            pool="p",
            labels={"zone": "a", "size": "4"},
            allocatable={"cpu": 2000, "x": 1},
            unschedulable=True,
        )
    )
    row = nodes.row("b")
    assert row is not None
    allocatable = nodes.resources.mapping(nodes.allocatable()[row])
    assert allocatable == {"cpu": 2000, "pods": UNLIMITED_PODS, "x": 1}  # no pods reported: no limit
    assert not nodes.schedulable[row]
    nodes.remove("c")
    assert list(nodes.pool_rows()) == ["p"]
    assert matching(nodes, tolerations=(Toleration(operator="Exists"),)) == ["a", "b"]


def test_could_hold_is_the_ever_fits_test_for_one_job() -> None:
    """Shape, labels, taints and pools must all admit the job; current use does not count."""
    nodes = db()
    fenced = (term(NodeSelectorRequirement("zone", "NotIn", ("a",))),)
    assert nodes.could_hold(JobRequirements(id="j", queue="q", requests={"cpu": 4000}))
    assert not nodes.could_hold(JobRequirements(id="j", queue="q", requests={"cpu": 4000}, affinity=fenced))
    gpu = (Toleration("gpu", "Exists", "", ""),)
    assert nodes.could_hold(
        JobRequirements(id="j", queue="q", requests={"cpu": 4000}, affinity=fenced, tolerations=gpu)
    )
    assert not nodes.could_hold(JobRequirements(id="j", queue="q", requests={"cpu": 32000}, tolerations=gpu))
    assert not nodes.could_hold(
        JobRequirements(id="j", queue="q", requests={"nvidia.com/gpu": 1}, pools=("p",))
    )
    assert nodes.could_hold(
        JobRequirements(id="j", queue="q", requests={"nvidia.com/gpu": 1}, tolerations=gpu)
    )


def test_could_hold_counts_pool_tolerations_and_floating_resources() -> None:
    """A pool's default tolerations admit its tainted nodes (and only its own); a floating
    resource fits the nodes of a pool that has enough of it."""
    nodes = db()
    gpu_job = JobRequirements(id="j", queue="q", requests={"nvidia.com/gpu": 1})
    tolerate = (Toleration("gpu", "Exists", "", ""),)
    assert not nodes.could_hold(gpu_job)
    assert nodes.could_hold(gpu_job, pool_tolerations={"q": tolerate})
    assert not nodes.could_hold(gpu_job, pool_tolerations={"p": tolerate})
    licensed = JobRequirements(id="l", queue="q", requests={"cpu": 1000, "licence": 2})
    assert not nodes.could_hold(licensed)
    assert nodes.could_hold(licensed, floating={"p": {"licence": 2}})
    assert not nodes.could_hold(licensed, floating={"p": {"licence": 1}})


def test_live_shapes_follow_a_resource_first_named_after_they_were_kept() -> None:
    """A job naming a new resource widens every vector; the kept shapes must widen too."""
    nodes = db()
    before = nodes.live_shapes({}).shape.shape[1]
    nodes.resources.column("example.com/fpga")
    after = nodes.live_shapes({})
    assert after.shape.shape[1] == before + 1
    assert after.shape.shape[1] == len(nodes.resources)
