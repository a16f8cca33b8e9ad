"""Submission rules for the ports a job exposes (``services`` and ``ingress``).

Every exposed port must be a ``containerPort`` its pod spec declares, in exactly one
container (the Service needs one target), and not a ``hostPort`` (that is on the node
already, as upstream leaves it). A port may appear once per kind of Service (NodePort,
Headless, Ingress): twice would give one Service two ports of the same number, which the
API server refuses when the pod is already placed. Upstream also requires each config to
list at least one port. Pure, like the rest of validation.
"""

from __future__ import annotations

import re
from typing import Any

from armada.model.errors import InvalidRequest
from armada.model.ingress import ContainerPort, IngressConfig, ServiceConfig, declared_ports

#: A Service name: an RFC 1035 label, as the API server requires.
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
#: A Secret name: an RFC 1123 subdomain.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_exposed_ports(
    services: list[ServiceConfig], ingress: list[IngressConfig], pod_spec: dict[str, Any], where: str
) -> None:
    """Raise ``InvalidRequest`` naming the first bad field of ``services`` or ``ingress``."""
    if not services and not ingress:
        return
    declared = declared_ports(pod_spec)
    used: dict[str, dict[int, str]] = {}
    names: dict[str, str] = {}
    configs: list[tuple[str, str, list[int]]] = [
        (f"{where}.services[{i}]", service.type, service.ports) for i, service in enumerate(services)
    ]
    configs += [(f"{where}.ingress[{i}]", "Ingress", config.ports) for i, config in enumerate(ingress)]
    for field, kind, ports in configs:
        if not ports:
            raise InvalidRequest("list at least one port to expose", field=f"{field}.ports")
        seen = used.setdefault(kind, {})
        for j, number in enumerate(ports):
            port_field = f"{field}.ports[{j}]"
            _check_declared(number, declared, port_field)
            if number in seen:
                raise InvalidRequest(
                    f"port {number} is already exposed by {seen[number]} ({kind}): once per kind",
                    field=port_field,
                )
            seen[number] = field
    for i, service in enumerate(services):
        if service.name:
            _check_name(service.name, names, f"{where}.services[{i}].name")
    for i, config in enumerate(ingress):
        if config.cert_name and not _DNS_SUBDOMAIN.match(config.cert_name):
            raise InvalidRequest(
                f"certName {config.cert_name!r} is not a Secret name (lower-case RFC 1123 subdomain)",
                field=f"{where}.ingress[{i}].certName",
            )


def _check_declared(number: int, declared: dict[int, list[ContainerPort]], field: str) -> None:
    found = declared.get(number)
    if not found:
        raise InvalidRequest(
            f"port {number} is not a containerPort of any container of the pod spec", field=field
        )
    if len(found) > 1:
        containers = ", ".join(port.container for port in found)
        raise InvalidRequest(
            f"port {number} is declared by containers {containers}: expose a port one container declares",
            field=field,
        )
    if found[0].host_port:
        raise InvalidRequest(
            f"port {number} of container {found[0].container!r} has a hostPort: it is reachable on "
            "its node already",
            field=field,
        )


def _check_name(name: str, names: dict[str, str], field: str) -> None:
    if not _DNS_LABEL.match(name):
        raise InvalidRequest(
            f"service name {name!r} is not an RFC 1035 label (a-z, 0-9 and '-', starting with a letter)",
            field=field,
        )
    if name in names:
        raise InvalidRequest(f"service name {name!r} is already used by {names[name]}", field=field)
    names[name] = field
