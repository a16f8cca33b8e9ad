"""What a lease carries to the executor: the job's pod as its pool makes it, the priority
class override, and a gang member's node uniformity value (the lease service picks the runs)."""

from __future__ import annotations

from typing import Any

import msgspec

from armada.model import events as ev
from armada.model.jobs import GANG_NODE_UNIFORMITY_ANNOTATION, Job
from armada.model.leases import Lease
from armada.model.retry_mutation import NODE_NAME_LABEL
from armada.scheduler.cluster_state import RunInfo


def tolerations_on(
    node: ev.ExecutorNode | None, pool: list[dict[str, str]], away: list[dict[str, str]]
) -> list[dict[str, str]]:
    """What a pod on ``node`` tolerates beyond its own: its pool's job defaults, and those of
    its class's away tolerations whose taint the node carries (it was placed there away)."""
    if not away or node is None:
        return pool
    tainted = {taint.key for taint in node.taints}
    return [*pool, *(t for t in away if t["key"] in tainted)]


def pod_for_pool(job: Job, tolerations: list[dict[str, str]], floating: frozenset[str]) -> Job:
    """``job`` as its pod is made in its pool: tolerating ``tolerations`` (the pool's job
    defaults) and requesting no ``floating`` resource (the scheduler accounted for them)."""
    pod_spec = job.pod_spec
    if tolerations:
        own = pod_spec.get("tolerations") or []
        pod_spec = {**pod_spec, "tolerations": [*own, *(t for t in tolerations if t not in own)]}
    if floating:
        pod_spec = {
            **pod_spec,
            "containers": [_without(c, floating) for c in pod_spec.get("containers") or []],
        }
    return job if pod_spec is job.pod_spec else msgspec.structs.replace(job, pod_spec=pod_spec)


def _without(container: dict[str, Any], floating: frozenset[str]) -> dict[str, Any]:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return container
    trimmed = {
        bound: {k: v for k, v in values.items() if k not in floating} if isinstance(values, dict) else values
        for bound, values in resources.items()
    }
    return {**container, "resources": trimmed}


def lease_of(run: RunInfo, job: Job, node: ev.ExecutorNode | None, override: str | None) -> Lease:
    """The lease of ``run``; a gang member with a node uniformity label is told the value
    its gang was placed on (the node's value of that label), as upstream's
    ``ARMADA_GANG_NODE_UNIFORMITY_LABEL_*`` variables say; ``override`` is
    ``scheduling.priorityClassNameOverride``."""
    pod_spec, priority_class = job.pod_spec, job.priority_class_name
    if override is not None:
        pod_spec = {k: v for k, v in pod_spec.items() if k != "priorityClassName"}
        if override:
            pod_spec["priorityClassName"] = override
        priority_class = override
    label = job.annotations.get(GANG_NODE_UNIFORMITY_ANNOTATION, "") if job.gang_cardinality > 1 else ""
    # Every node carries its name label, as the scheduler placed it by (see ``cluster_state``).
    node_labels = {NODE_NAME_LABEL: node.name, **node.labels} if node is not None else {}
    value = node_labels.get(label, "") if label else ""
    return Lease(
        run_id=run.run_id,
        job_id=job.id,
        queue=job.queue,
        job_set_id=job.job_set_id,
        owner=job.owner,
        namespace=job.namespace,
        node=run.node,
        pod_spec=pod_spec,
        labels=job.labels,
        annotations=job.annotations,
        priority_class_name=priority_class,
        gang_id=job.gang_id,
        gang_cardinality=job.gang_cardinality if job.gang_id else 0,
        gang_node_uniformity_label=label if value else "",
        gang_node_uniformity_value=value,
        services=job.services,
        ingress=job.ingress,
    )
