"""Retry mutations: memory grows (compounding, one kind per job), nodes are avoided."""

from __future__ import annotations

from armada.model.jobs import Job, ResourceRequirements
from armada.model.retry import AffinityMutation, MemoryMutation, Mutation, ResourcesMutation
from armada.model.retry_mutation import MEMORY_BUMP_ANNOTATION, avoid_node_labels, avoided_nodes, mutate_job


def job(memory: str = "1Gi") -> Job:
    resources = {"requests": {"cpu": "1", "memory": memory}, "limits": {"cpu": "1", "memory": memory}}
    return Job(
        id="j",
        queue="q",
        job_set_id="s",
        namespace="default",
        pod_spec={"containers": [{"name": "c", "image": "x", "resources": resources}]},
        scheduling_resource_requirements=ResourceRequirements(requests={"cpu": "1", "memory": memory}),
    )


def memory(factor: float | None = None, static: str = "") -> Mutation:
    return Mutation(resources=ResourcesMutation(memory=MemoryMutation(factor=factor, static=static)))


def container_memory(j: Job) -> tuple[str, str]:
    resources = j.pod_spec["containers"][0]["resources"]
    return resources["requests"]["memory"], resources["limits"]["memory"]


def test_memory_factor_compounds_and_keeps_its_kind() -> None:
    once = mutate_job(job("1000"), memory(factor=1.5), "n1")
    assert once is not None and container_memory(once) == ("1500", "1500")
    assert once.scheduling_resource_requirements.requests["memory"] == "1500"
    assert once.annotations[MEMORY_BUMP_ANNOTATION] == "factor"
    twice = mutate_job(once, memory(factor=1.5), "n1")
    assert twice is not None and container_memory(twice) == ("2250", "2250")
    assert mutate_job(twice, memory(static="1Gi"), "n1") is None, "one bump kind per job"


def test_memory_static_adds_a_quantity() -> None:
    grown = mutate_job(job("1Gi"), memory(static="512Mi"), "n1")
    assert grown is not None and container_memory(grown) == (str(1536 * 2**20), str(1536 * 2**20))
    assert job().pod_spec["containers"][0]["resources"]["requests"]["memory"] == "1Gi", "original untouched"


def test_avoid_same_node_accumulates_nodes_in_every_term() -> None:
    avoid = Mutation(affinity=AffinityMutation(avoid_same_node=True))
    first = mutate_job(job(), avoid, "n1")
    assert first is not None and avoided_nodes(first) == ["n1"]
    second = mutate_job(first, avoid, "n2")
    assert second is not None and avoided_nodes(second) == ["n1", "n2"]
    assert mutate_job(second, avoid, "n2") is None, "already avoided: unchanged"
    assert mutate_job(job(), Mutation(affinity=AffinityMutation(avoid_same_node=False)), "n1") is None


def test_node_labels_are_avoided_by_value_once() -> None:
    fenced = avoid_node_labels(job(), {"rack": "r1", "kubernetes.io/hostname": "n1"})
    assert fenced is not None and avoided_nodes(fenced) == ["n1"]
    expressions = fenced.pod_spec["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert {"key": "rack", "operator": "NotIn", "values": ["r1"]} in expressions["nodeSelectorTerms"][0][
        "matchExpressions"
    ]
    assert avoid_node_labels(fenced, {"rack": "r1"}) is None, "already avoided: unchanged"
    assert avoid_node_labels(job(), {}) is None
