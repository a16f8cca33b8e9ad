"""The API server's side of Services in the double: validation and IP/NodePort allocation.

A real API server refuses a Service whose ports repeat a number or a name (422 Invalid),
gives every non-headless Service a cluster IP, and gives each port of a NodePort Service a
node port from 30000-32767 (409-free: never two alike); the executor's addresses are read
from what it assigns.
"""

from __future__ import annotations

import itertools

from tests.integration.executor.kube_store import ApiError, Obj

NODE_PORTS = range(30000, 32768)


class ServiceAllocator:
    """Mixed into ``KubeDouble`` (which sets ``node_ports``)."""

    node_ports: set[int]
    _cluster_ips = itertools.count(1)

    def allocate(self, service: Obj) -> None:
        """Validate ``service`` and assign its cluster IP and node ports (``ApiError`` if invalid)."""
        name = service["metadata"]["name"]
        spec = service.setdefault("spec", {})
        ports = spec.get("ports") or []
        numbers = [(p.get("port"), p.get("protocol", "TCP")) for p in ports]
        names = [p.get("name") for p in ports]
        if not ports or len(set(numbers)) < len(numbers) or len(set(names)) < len(names):
            raise ApiError(422, "Invalid", f'Service "{name}" is invalid: spec.ports: Duplicate value')
        if len(ports) > 1 and not all(names):
            raise ApiError(422, "Invalid", f'Service "{name}" is invalid: spec.ports[0].name: Required value')
        if spec.get("clusterIP") != "None":
            index = next(self._cluster_ips)
            spec["clusterIP"] = f"10.96.{index // 256 % 256}.{index % 256}"
        if spec.get("type") == "NodePort":
            for port in ports:
                free = next(n for n in NODE_PORTS if n not in self.node_ports)
                self.node_ports.add(free)
                port["nodePort"] = free
