"""Submission rules for the ports a job exposes (``services`` and ``ingress``).

Every exposed port must be a ``containerPort`` its pod spec declares, in exactly one
container (the Service needs one target), and not a ``hostPort`` (that is on the node
already, as upstream leaves it). A port may appear once per kind of Service (NodePort,
Headless, Ingress): twice would give one Service two ports of the same number, which the
API server refuses when the pod is already placed. Upstream also requires each config to
list at least one port. Then the operator's :class:`~armada.model.ingress_policy.IngressPolicy`
(Service types, names kept under the job's own prefix, annotation keys, certificates), the
same rules the executor checks again. Pure, like the rest of validation.
"""

from __future__ import annotations

from typing import Any

from armada.model.errors import InvalidRequest
from armada.model.ingress import ContainerPort, IngressConfig, ServiceConfig, declared_ports
from armada.model.ingress_policy import IngressPolicy, exposure_violation


def check_exposed_ports(
    services: list[ServiceConfig],
    ingress: list[IngressConfig],
    pod_spec: dict[str, Any],
    where: str,
    policy: IngressPolicy,
) -> None:
    """Raise ``InvalidRequest`` naming the first bad field of ``services`` or ``ingress``
    (ports, then the operator's ``policy``: types, names, annotations, certificates)."""
    if not services and not ingress:
        return
    declared = declared_ports(pod_spec)
    used: dict[str, dict[int, str]] = {}
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
    found = exposure_violation(services, ingress, policy)
    if found is not None:
        raise InvalidRequest(found.detail, field=f"{where}.{found.path}")


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
