"""Node reports from the Kubernetes API's node and pod JSON.

A node's capacity for Armada is its allocatable resources minus what pods *not* started
by Armada (daemon sets, system pods) request on it; the server subtracts its own runs.
Every such pod also counts against the node's ``pods`` capacity (kubelet's max pods).

A node that has been NotReady for less than a grace period is still reported ready: a
kubelet missing a few heartbeats usually comes back with its pods still running, and
Kubernetes itself waits 5 minutes before evicting them; reporting it lost at once would
make the server requeue every run on it while they keep running.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from armada.executor.backends.kube_pods import is_finished, parse_time, run_id_of
from armada.model.leases import NodeReport
from armada.model.quantities import QuantityError, format_units, to_units
from armada.model.taints import Taint

Json = dict[str, Any]


def pod_requests(pod: Json) -> dict[str, int]:
    """A pod's effective requests in integer units: containers summed, init containers' peak."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = defaultdict(int)
    for container in spec.get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] += _units(name, value)
    for container in spec.get("initContainers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total[name], _units(name, value))
    return dict(total)


def pod_node(pod: Json) -> str:
    """The node a pod uses: the one it is bound to or, before binding, the one kube-scheduler
    nominated it for after preempting pods there (that room is promised to it); '' if neither."""
    node = (pod.get("spec") or {}).get("nodeName") or (pod.get("status") or {}).get("nominatedNodeName")
    return str(node or "")


def _units(name: str, value: str | int | float) -> int:
    try:
        return to_units(name, value)
    except QuantityError:
        return 0


def non_armada_usage(pods: Iterable[Json]) -> dict[str, dict[str, int]]:
    """Requests of active non-Armada pods, per node name."""
    usage: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod in pods:
        node = pod_node(pod)
        if not node or run_id_of(pod) or is_finished(pod):
            continue
        for name, units in pod_requests(pod).items():
            usage[node][name] += units
        usage[node]["pods"] += 1
    return usage


def is_ready(conditions: list[Json], not_ready_grace: float, now: datetime | None = None) -> bool:
    """Ready, or not ready for less than ``not_ready_grace`` seconds."""
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return False
    if ready.get("status") == "True":
        return True
    since = parse_time(ready.get("lastTransitionTime"))
    return since is not None and ((now or datetime.now(UTC)) - since).total_seconds() < not_ready_grace


def node_report(node: Json, used: dict[str, int], not_ready_grace: float = 0.0) -> NodeReport:
    """One node as the lease call reports it."""
    metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    ready = is_ready(status.get("conditions") or [], not_ready_grace)
    return NodeReport(
        name=str(metadata.get("name", "")),
        labels=dict(metadata.get("labels") or {}),
        taints=[
            Taint(key=t["key"], value=t.get("value") or "", effect=t.get("effect") or "NoSchedule")
            for t in spec.get("taints") or []
        ],
        allocatable={k: str(v) for k, v in (status.get("allocatable") or {}).items()},
        allocated_non_armada={name: format_units(name, units) for name, units in used.items() if units},
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
    )


def node_reports(
    nodes: Iterable[Json], pods: Iterable[Json], not_ready_grace: float = 0.0
) -> list[NodeReport]:
    """Every node with what non-Armada pods use on it."""
    usage = non_armada_usage(pods)
    return [
        node_report(node, usage.get((node.get("metadata") or {}).get("name", ""), {}), not_ready_grace)
        for node in nodes
    ]
