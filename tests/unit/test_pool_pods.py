"""A leased pod as its pool makes it: the pool's default tolerations added, floating
resources left out (no node has them; the scheduler accounted for them)."""

from __future__ import annotations

import msgspec

from armada.scheduler.lease_contents import pod_for_pool
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
