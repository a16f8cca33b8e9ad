"""Building the Kubernetes pod of a lease: name, labels, annotations, env and node pin.

The pod is pinned to its node by the node's *name* (``nodeAffinity`` ``matchFields``
``metadata.name``): a hostname label need not equal the node name (cloud providers differ),
and a pin that matches no node leaves the pod pending for ever.
"""

from __future__ import annotations

import copy
from typing import Any

from armada.executor.env import armada_env
from armada.model.ids import pod_name
from armada.model.jobs import JOB_SET_ANNOTATION, OWNER_ANNOTATION
from armada.model.leases import Lease
from armada.model.metadata import as_label_value

JOB_ID_LABEL = "armada_job_id"
RUN_ID_LABEL = "armada_job_run_id"
QUEUE_LABEL = "armada_queue_id"
#: The executor that created the pod: two executors on one cluster leave each other's alone.
EXECUTOR_LABEL = "armada_executor_id"


def pin_to_node(spec: dict[str, Any], node: str) -> None:
    """Require ``node`` by name, in every term of the pod's own required node affinity."""
    pin = {"key": "metadata.name", "operator": "In", "values": [node]}
    affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:  # terms are ORed: each one must carry the pin
        term["matchFields"] = [*(term.get("matchFields") or []), pin]
    required["nodeSelectorTerms"] = terms


def build_pod(lease: Lease, *, executor_id: str = "") -> dict[str, Any]:
    """The pod manifest (JSON) that runs ``lease`` on its node."""
    spec = copy.deepcopy(lease.pod_spec)
    spec["restartPolicy"] = "Never"
    if lease.node:
        pin_to_node(spec, lease.node)
    if lease.priority_class_name:
        spec["priorityClassName"] = lease.priority_class_name
    extra_env = armada_env(lease)
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            kept = [e for e in container.get("env") or [] if e.get("name") not in extra_env]
            container["env"] = [*kept, *({"name": k, "value": v} for k, v in extra_env.items())]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(lease.job_id),
            "namespace": lease.namespace,
            "labels": {
                **lease.labels,
                JOB_ID_LABEL: lease.job_id,
                RUN_ID_LABEL: lease.run_id,
                # A queue stored before names had to be label values gets a valid one.
                QUEUE_LABEL: as_label_value(lease.queue),
                **({EXECUTOR_LABEL: executor_id} if executor_id else {}),
            },
            "annotations": {
                **lease.annotations,
                JOB_SET_ANNOTATION: lease.job_set_id,
                OWNER_ANNOTATION: lease.owner,
            },
        },
        "spec": spec,
    }
