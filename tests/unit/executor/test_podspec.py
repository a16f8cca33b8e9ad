from __future__ import annotations

from armada.executor.env import container_env, expand_refs
from armada.executor.podspec import build_pod
from armada.model.ids import pod_name
from armada.model.leases import Lease


def make_lease(**fields: object) -> Lease:
    spec = {
        "restartPolicy": "Always",
        "nodeSelector": {"disk": "ssd"},
        "initContainers": [{"name": "init", "image": "x"}],
        "containers": [{"name": "main", "image": "x", "env": [{"name": "ARMADA_QUEUE", "value": "spoofed"}]}],
    }
    base: dict[str, object] = {
        "run_id": "r1",
        "job_id": "01HXYZABC",
        "queue": "q",
        "job_set_id": "set",
        "owner": "alice",
        "namespace": "ns",
        "node": "node-7",
        "pod_spec": spec,
        "labels": {"team": "a"},
        "annotations": {"armadaproject.io/gangId": "g"},
    }
    return Lease(**{**base, **fields})  # type: ignore[arg-type]


def test_pod_name_is_a_dns_label() -> None:
    assert pod_name("01HXYZABC") == "armada-01hxyzabc-0"


def test_build_pod() -> None:
    leased = make_lease(priority_class_name="armada-default")
    pod = build_pod(leased)
    meta, spec = pod["metadata"], pod["spec"]
    assert (meta["name"], meta["namespace"]) == ("armada-01hxyzabc-0", "ns")
    assert meta["labels"] == {
        "team": "a",
        "armada_job_id": "01HXYZABC",
        "armada_job_run_id": "r1",
        "armada_queue_id": "q",
    }
    assert meta["annotations"] == {
        "armadaproject.io/gangId": "g",
        "armada_jobset_id": "set",
        "armada_owner": "alice",
    }
    assert spec["restartPolicy"] == "Never"
    assert spec["nodeSelector"] == {"disk": "ssd"}, "pinned by node name, not by a label"
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    pin = {"key": "metadata.name", "operator": "In", "values": ["node-7"]}
    assert required["nodeSelectorTerms"] == [{"matchFields": [pin]}]
    assert spec["priorityClassName"] == "armada-default"
    for container in (spec["initContainers"][0], spec["containers"][0]):
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env == {"ARMADA_JOB_ID": "01HXYZABC", "ARMADA_QUEUE": "q", "ARMADA_JOB_SET_ID": "set"}
    assert leased.pod_spec["restartPolicy"] == "Always", "the lease's spec is not modified"


def test_gang_env_and_executor_label() -> None:
    pod = build_pod(make_lease(gang_id="g", gang_cardinality=3), executor_id="exec-a")
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert (env["ARMADA_GANG_ID"], env["ARMADA_GANG_CARDINALITY"]) == ("g", "3")
    assert pod["metadata"]["labels"]["armada_executor_id"] == "exec-a"


def test_the_node_pin_is_added_to_every_term_of_the_pods_own_node_affinity() -> None:
    own = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, {}]
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": own}}
    }
    pod = build_pod(make_lease(pod_spec={"containers": [{"name": "c"}], "affinity": affinity}))
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    pin = {"key": "metadata.name", "operator": "In", "values": ["node-7"]}
    assert [t["matchFields"] for t in terms["nodeSelectorTerms"]] == [[pin], [pin]]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "zone"


def test_container_env_resolves_field_refs() -> None:
    container = {
        "env": [
            {
                "name": "GANG",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['armadaproject.io/gangId']"}},
            },
            {"name": "TEAM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['team']"}}},
            {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "GREETING", "value": "hi $(POD) $$(POD) $(MISSING)"},
        ]
    }
    env = container_env(container, make_lease(), pod_name="armada-x-0", node="n")
    assert env["GANG"] == "g" and env["TEAM"] == "a" and env["UID"] == "r1" and env["POD"] == "armada-x-0"
    assert env["SECRET"] == ""
    assert env["GREETING"] == "hi armada-x-0 $(POD) $(MISSING)"
    assert env["ARMADA_JOB_ID"] == "01HXYZABC"


def test_expand_refs() -> None:
    assert expand_refs("$(A)-$(B)", {"A": "1"}) == "1-$(B)"


def test_gang_uniformity_env_reaches_local_processes() -> None:
    """The process backend resolves env itself: a gang member sees its label and value there too."""
    leased = make_lease(
        gang_id="g", gang_cardinality=2, gang_node_uniformity_label="rack", gang_node_uniformity_value="r2"
    )
    env = container_env(leased.pod_spec["containers"][0], leased, pod_name="p", node="node-7")
    assert env["ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME"] == "rack"
    assert env["ARMADA_GANG_NODE_UNIFORMITY_LABEL_VALUE"] == "r2"
    assert "ARMADA_GANG_NODE_UNIFORMITY_LABEL_NAME" not in container_env(
        make_lease().pod_spec["containers"][0], make_lease(), pod_name="p", node="node-7"
    )
