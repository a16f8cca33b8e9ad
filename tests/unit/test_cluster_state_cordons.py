"""Operators' cordons in the scheduler's state: applied from events, in any order with the
executors' node reports, and undone by uncordon, settings deletion or forgetting."""

from __future__ import annotations

from armada.model import events as ev
from armada.scheduler.cluster_state import ClusterState, node_key
from armada.scheduling import SchedulingConfig


def schedulable(state: ClusterState, executor: str, node: str) -> bool:
    row = state.nodes.row(node_key(executor, node))
    assert row is not None, f"{executor}/{node} is not in the node db"
    return bool(state.nodes.schedulable[row])


def alive(state: ClusterState, executor: str, node: str) -> bool:
    row = state.nodes.row(node_key(executor, node))
    return row is not None and bool(state.nodes.alive[row])


def report(executor: str, *nodes: str) -> ev.ExecutorReported:
    return ev.ExecutorReported(
        executor_id=executor, nodes=[ev.ExecutorNode(name=n, allocatable={"cpu": 4000}) for n in nodes]
    )


def cordon(executor: str, node: str, cordoned: bool = True) -> ev.NodeCordonChanged:
    return ev.NodeCordonChanged(
        executor_id=executor, node=node, cordoned=cordoned, reason="bad disk" if cordoned else ""
    )


def test_a_node_cordon_applies_at_once_and_survives_node_reports() -> None:
    state = ClusterState(SchedulingConfig())
    state.apply(1, report("c1", "n1", "n2"))
    state.apply(2, cordon("c1", "n1"))
    assert not schedulable(state, "c1", "n1") and schedulable(state, "c1", "n2")
    state.apply(3, report("c1", "n1", "n2", "n3"))  # the executor's next report says schedulable
    assert not schedulable(state, "c1", "n1")
    state.apply(4, cordon("c1", "n1", cordoned=False))
    assert schedulable(state, "c1", "n1")
    assert state.cordoned_nodes == {"c1": {}}


def test_a_node_cordoned_before_its_executor_reports_it_joins_cordoned() -> None:
    state = ClusterState(SchedulingConfig())
    state.apply(1, cordon("c2", "n1"))
    state.apply(2, report("c2", "n1"))
    assert not schedulable(state, "c2", "n1")


def test_executor_settings_cordon_and_uncordon() -> None:
    state = ClusterState(SchedulingConfig())
    state.apply(1, ev.ExecutorSettingsUpserted(executor_id="c1", cordoned=True, cordon_reason="upgrade"))
    assert state.cordoned_executors == {"c1": "upgrade"}
    state.apply(2, ev.ExecutorSettingsUpserted(executor_id="c1", cordoned=False))
    assert state.cordoned_executors == {}
    state.apply(3, ev.ExecutorSettingsUpserted(executor_id="c1", cordoned=True))
    state.apply(4, ev.ExecutorSettingsDeleted(executor_id="c1"))
    assert state.cordoned_executors == {}


def test_forgetting_an_executor_removes_it_its_nodes_and_their_cordons() -> None:
    state = ClusterState(SchedulingConfig())
    state.apply(1, report("c1", "n1", "n2"))
    state.apply(2, cordon("c1", "n1"))
    state.apply(3, ev.ExecutorDeleted(executor_id="c1"))
    assert "c1" not in state.executors and "c1" not in state.cordoned_nodes
    assert not alive(state, "c1", "n1") and not alive(state, "c1", "n2")
    state.apply(4, report("c1", "n1"))  # it comes back: a fresh start, nothing cordoned
    assert schedulable(state, "c1", "n1")
