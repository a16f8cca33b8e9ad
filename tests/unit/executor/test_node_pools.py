"""Node pools from node labels and the reservation taint (upstream's executor rules)."""

from __future__ import annotations

from armada.executor.node_pools import node_pool, with_pools
from armada.model.leases import NodeReport, Taint

LABEL = "armadaproject.io/pool"


def pool_of(node: NodeReport, suffix: str = "-reserved") -> str:
    return node_pool(node, default_pool="cpu", label=LABEL, reserved_suffix=suffix)


def test_a_labelled_node_is_in_its_labels_pool_others_in_the_executors() -> None:
    assert pool_of(NodeReport(name="a", labels={LABEL: "gpu-h100"})) == "gpu-h100"
    assert pool_of(NodeReport(name="b")) == "cpu"
    assert pool_of(NodeReport(name="c", labels={LABEL: ""})) == "cpu"


def test_a_reserved_node_is_in_the_reserved_sub_pool_unless_the_suffix_is_off() -> None:
    taint = Taint(key="armadaproject.io/reservation", value="team-a")
    reserved = NodeReport(name="a", labels={LABEL: "gpu"}, taints=[taint])
    assert pool_of(reserved) == "gpu-reserved"
    assert pool_of(NodeReport(name="b", taints=[taint])) == "cpu-reserved"
    assert pool_of(reserved, suffix="") == "gpu"


def test_the_pool_is_sent_only_where_it_differs_from_the_executors() -> None:
    nodes = [NodeReport(name="a", labels={LABEL: "gpu"}), NodeReport(name="b")]
    sent = with_pools(nodes, default_pool="cpu", label=LABEL, reserved_suffix="")
    assert [n.pool for n in sent] == ["gpu", ""]
    assert sent[1] is nodes[1]
    assert [n.pool for n in with_pools(nodes, default_pool="cpu", label="", reserved_suffix="")] == ["", ""]
