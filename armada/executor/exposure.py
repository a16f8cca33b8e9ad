"""The Services and Ingresses that expose a run's ports, and the addresses they give.

Named as upstream names them: one Service per kind of the job's unnamed service configs,
``armada-<jobId>-0-nodeport`` / ``-headless``, one for its ingress configs,
``armada-<jobId>-0-ingress`` (ClusterIP if any config asks ``useClusterIP``, else headless),
and one Ingress per ingress config, ``armada-<jobId>-0-ingress-<index>``, with one host per
port: ``<container>-<port>-armada-<jobId>-0.<namespace>.<hostnameSuffix>``. A service config
with a ``name`` gets a Service named ``armada-<jobId>-0-<name>``: every object's name starts
with the job's own prefix, so none can be another team's or the cluster's (upstream would use
the bare name). Ingress annotations are the job's allowed ones under the operator's, which
win. Every object carries the pod's Armada labels
(job, run, queue, executor) and annotations (job set, owner), selects the run's pod by its
job and run labels, and is *owned* by the pod (``ownerReferences``), so that Kubernetes'
garbage collector deletes it with the pod. Pure: tested without a cluster.
"""

from __future__ import annotations

import zlib
from typing import Any, Literal, NamedTuple

from armada.executor.podspec import (
    EXECUTOR_LABEL,
    JOB_ID_LABEL,
    QUEUE_LABEL,
    RUN_ID_LABEL,
)
from armada.executor.settings import IngressSettings
from armada.model.ids import pod_name
from armada.model.ingress import ContainerPort, IngressConfig, ServiceType, declared_ports
from armada.model.jobs import JOB_SET_ANNOTATION, OWNER_ANNOTATION
from armada.model.leases import Lease

Json = dict[str, Any]
#: A Service's purpose: a service config's type, or backing the job's Ingresses.
PlanKind = ServiceType | Literal["Ingress"]


class ServicePlan(NamedTuple):
    """One Service a run needs: its name, kind, ports, and (kind ``Ingress``) its Ingresses."""

    name: str
    kind: PlanKind
    ports: list[ContainerPort]
    cluster_ip: bool
    ingress: list[tuple[int, IngressConfig]] = []


def service_plans(lease: Lease) -> list[ServicePlan]:
    """The Services of ``lease``'s ``services`` and ``ingress`` (none if it exposes nothing)."""
    declared = declared_ports(lease.pod_spec)

    def ports(numbers: list[int]) -> list[ContainerPort]:
        return [declared[n][0] for n in numbers if declared.get(n)]  # checked at submission

    base = pod_name(lease.job_id)
    plans: list[ServicePlan] = []
    grouped: dict[ServiceType, list[int]] = {}
    for service in lease.services:
        if service.name:
            named = f"{base}-{service.name}"
            plans.append(ServicePlan(named, service.type, ports(service.ports), service.type == "NodePort"))
        else:
            grouped.setdefault(service.type, []).extend(service.ports)
    for kind, numbers in grouped.items():
        plans.append(ServicePlan(f"{base}-{kind.lower()}", kind, ports(numbers), kind == "NodePort"))
    if lease.ingress:
        numbers = [number for config in lease.ingress for number in config.ports]
        use_cluster_ip = any(config.use_cluster_ip for config in lease.ingress)
        plans.append(
            ServicePlan(
                f"{base}-ingress", "Ingress", ports(numbers), use_cluster_ip, list(enumerate(lease.ingress))
            )
        )
    return [plan for plan in plans if plan.ports]


def owner_reference(pod: Json) -> Json:
    """The pod as the owner of what exposes it (no ``blockOwnerDeletion``: that needs the
    right to set finalizers on pods, which the executor does not have)."""
    metadata = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Pod", "name": metadata["name"], "uid": metadata["uid"]}


def _metadata(name: str, pod: Json, extra_annotations: dict[str, str] | None = None) -> Json:
    metadata = pod["metadata"]
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    kept = (JOB_ID_LABEL, RUN_ID_LABEL, QUEUE_LABEL, EXECUTOR_LABEL)
    return {
        "name": name,
        "namespace": metadata.get("namespace", "default"),
        "labels": {key: labels[key] for key in kept if key in labels},
        "annotations": {
            **(extra_annotations or {}),
            **{key: annotations[key] for key in (JOB_SET_ANNOTATION, OWNER_ANNOTATION) if key in annotations},
        },
        "ownerReferences": [owner_reference(pod)],
    }


def port_name(port: ContainerPort) -> str:
    """``<container>-<port>``, as upstream names a Service port."""
    return f"{port.container}-{port.port}"


def service_manifest(plan: ServicePlan, pod: Json) -> Json:
    """The Service of ``plan`` for the created ``pod`` (JSON, with its uid)."""
    labels = pod["metadata"].get("labels") or {}
    spec: Json = {
        "type": "NodePort" if plan.kind == "NodePort" else "ClusterIP",
        "selector": {key: labels[key] for key in (JOB_ID_LABEL, RUN_ID_LABEL) if key in labels},
        "ports": [
            {"name": port_name(p), "port": p.port, "targetPort": p.port, "protocol": p.protocol}
            for p in plan.ports
        ],
    }
    if not plan.cluster_ip:
        spec["clusterIP"] = "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": _metadata(plan.name, pod), "spec": spec}


def hostname(port: ContainerPort, pod: Json, settings: IngressSettings) -> str:
    """``<container>-<port>-<pod>.<namespace>.<hostnameSuffix>`` (upstream's rule)."""
    metadata = pod["metadata"]
    parts = (
        f"{port_name(port)}-{metadata['name']}",
        metadata.get("namespace", "default"),
        settings.hostname_suffix,
    )
    return ".".join(part for part in parts if part)


def ingress_manifests(plan: ServicePlan, pod: Json, settings: IngressSettings) -> list[Json]:
    """One Ingress per ingress config of ``plan`` (a plan of kind ``Ingress``)."""
    manifests = []
    for index, config in plan.ingress:
        ports = [p for p in plan.ports if p.port in config.ports]
        hosts = [hostname(p, pod, settings) for p in ports]
        rules = [
            {
                "host": host,
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": plan.name, "port": {"number": p.port}}},
                        }
                    ]
                },
            }
            for host, p in zip(hosts, ports, strict=True)
        ]
        spec: Json = {"rules": rules}
        if settings.ingress_class:
            spec["ingressClassName"] = settings.ingress_class
        if config.tls_enabled:
            secret = config.cert_name or settings.tls_secret
            spec["tls"] = [{"hosts": hosts, **({"secretName": secret} if secret else {})}]
        annotations = {**config.annotations, **settings.annotations}
        manifests.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": _metadata(f"{plan.name}-{index}", pod, annotations),
                "spec": spec,
            }
        )
    return manifests


def node_port_addresses(service: Json, host: str) -> dict[int, str]:
    """``host:nodePort`` of each port of a created NodePort ``service``."""
    if (service.get("spec") or {}).get("type") != "NodePort":
        return {}
    return {
        int(port["port"]): f"{host}:{port['nodePort']}"
        for port in service["spec"].get("ports") or []
        if port.get("nodePort")
    }


def ingress_addresses(ingress: Json) -> dict[int, str]:
    """The host of each port an Ingress routes (upstream reports the bare hostname)."""
    found: dict[int, str] = {}
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            number = ((path.get("backend") or {}).get("service") or {}).get("port", {}).get("number")
            if number:
                found[int(number)] = str(rule.get("host") or "")
    return found


#: The range Kubernetes gives NodePorts from (``--service-node-port-range``'s default).
_NODE_PORTS = (30000, 32767)


def simulated_addresses(lease: Lease, node: str, settings: IngressSettings) -> dict[int, str]:
    """Addresses as the kubernetes backend would report them, for the fake backend: a stable
    NodePort on the node for NodePort services, the Ingress hostname for ingress ports."""
    pod = {"metadata": {"name": pod_name(lease.job_id), "namespace": lease.namespace}}
    low, high = _NODE_PORTS
    found: dict[int, str] = {}
    for plan in service_plans(lease):
        for port in plan.ports:
            if plan.kind == "NodePort":
                node_port = low + zlib.crc32(f"{lease.run_id}:{port.port}".encode()) % (high - low + 1)
                found[port.port] = f"{node}:{node_port}"
            elif plan.kind == "Ingress":
                found[port.port] = hostname(port, pod, settings)
    return found
