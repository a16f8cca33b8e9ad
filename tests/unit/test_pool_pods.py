"""A leased pod as its pool makes it: the pool's default tolerations added, floating
resources left out (no node has them; the scheduler accounted for them)."""

from __future__ import annotations

import msgspec

from armada.model import events as ev
from armada.model.taints import Taint
from armada.scheduler.lease_contents import pod_for_pool, tolerations_on
from tests.factories import make_job, pod_spec

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists"}


def test_pool_tolerations_are_added_once_and_floating_resources_removed() -> None:
    spec = pod_spec("1", "1Gi", tolerations=[GPU_TOLERATION])
    spec["containers"][0]["resources"]["requests"]["example.com/licence"] = "2"
    job = msgspec.structs.replace(make_job(), pod_spec=spec)
    own = {"key": "team", "operator": "Equal", "value": "a"}
    shaped = pod_for_pool(job, [GPU_TOLERATION, own], frozenset({"example.com/licence"}))
    assert shaped.pod_spec["tolerations"] == [GPU_TOLERATION, own]
    assert "example.com/licence" not in shaped.pod_spec["containers"][0]["resources"]["requests"]
    assert job.pod_spec["containers"][0]["resources"]["requests"]["example.com/licence"] == "2"
    assert pod_for_pool(job, [], frozenset()) is job


def test_a_pod_placed_away_tolerates_the_away_taints_its_node_carries() -> None:
    away = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    other = {"key": "tpu", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
    own = {"key": "team", "operator": "Exists"}
    gpu_node = ev.ExecutorNode(name="g", taints=[Taint("nvidia.com/gpu", "present")])
    assert tolerations_on(gpu_node, [own], [*away, other]) == [own, *away]
    assert tolerations_on(ev.ExecutorNode(name="c"), [own], away) == [own]
    assert tolerations_on(None, [own], away) == [own]
