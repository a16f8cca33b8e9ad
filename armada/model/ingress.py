"""The ports a job exposes: upstream's ``ServiceConfig`` and ``IngressConfig`` per job item.

A job names container ports it declared in its pod spec; the executor creates, with the
pod and owned by it, a Kubernetes Service per kind (``NodePort``: reachable on every node;
``Headless``: DNS only) and, for ``ingress``, a ClusterIP (or headless) Service plus one
Ingress per config. Kept in the job as submitted so that every run's executor sees them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

import msgspec

from armada.model.numbers import MAX_PORT, MIN_PORT, Port

#: Upstream's ``ServiceType`` names.
ServiceType = Literal["NodePort", "Headless"]
#: Kubernetes object names and DNS labels: at most 63 characters.
DnsLabel = Annotated[str, msgspec.Meta(max_length=63)]
#: Most ports one config may list (each becomes a port of a Service).
MAX_PORTS = 100
Ports = Annotated[list[Port], msgspec.Meta(max_length=MAX_PORTS)]


class _Config(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """Submitted with the job, stored in it: unknown fields are refused (a typo exposes nothing)."""


class ServiceConfig(_Config):
    type: ServiceType = "NodePort"
    ports: Ports = []
    #: The Service's name; empty: upstream's ``armada-<jobId>-0-<type>``.
    name: DnsLabel = ""


class IngressConfig(_Config):
    #: Upstream's deprecated ``IngressType`` (only ``Ingress`` exists).
    type: Literal["Ingress"] = "Ingress"
    ports: Ports = []
    annotations: dict[str, str] = {}
    tls_enabled: bool = False
    #: The TLS secret; empty: the executor's ``ingress.certNameSuffix`` rule.
    cert_name: Annotated[str, msgspec.Meta(max_length=253)] = ""
    #: Back the Ingress with a ClusterIP Service (else a headless one, as upstream).
    use_cluster_ip: bool = msgspec.field(default=False, name="useClusterIP")


#: Most service or ingress configs one job may carry.
MAX_CONFIGS = 32
Services = Annotated[list[ServiceConfig], msgspec.Meta(max_length=MAX_CONFIGS)]
Ingresses = Annotated[list[IngressConfig], msgspec.Meta(max_length=MAX_CONFIGS)]


def exposed_ports(services: list[ServiceConfig], ingress: list[IngressConfig]) -> list[int]:
    """Every port the configs expose, once each, in order."""
    return sorted(
        {port for service in services for port in service.ports}
        | {port for config in ingress for port in config.ports}
    )


class ContainerPort(NamedTuple):
    """A port a container of the pod spec declares."""

    container: str
    port: int
    protocol: str
    host_port: int


def declared_ports(pod_spec: dict[str, Any]) -> dict[int, list[ContainerPort]]:
    """The pod spec's ``containerPort`` numbers, each with the containers declaring it."""
    found: dict[int, list[ContainerPort]] = {}
    for container in pod_spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        for port in container.get("ports") or []:
            number = port.get("containerPort") if isinstance(port, dict) else None
            if isinstance(number, int) and MIN_PORT <= number <= MAX_PORT:
                host_port = port.get("hostPort")
                declared = ContainerPort(
                    container=str(container.get("name") or ""),
                    port=number,
                    protocol=str(port.get("protocol") or "TCP"),
                    host_port=host_port if isinstance(host_port, int) else 0,
                )
                found.setdefault(number, []).append(declared)
    return found
