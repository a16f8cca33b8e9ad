"""The Kubernetes API test double: kmock's stateful emulator behind a real HTTP port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp.web
import kmock
from kubernetes_asyncio import client


class LenientEmulator(kmock.KubernetesEmulator):
    """kubernetes-asyncio sends ``?watch=True`` (the API server accepts it); kmock wants ``true``."""

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if raw_request.query.get("watch") == "True":
            raw_request = raw_request.clone(rel_url=raw_request.rel_url.update_query(watch="true"))
        response: aiohttp.web.StreamResponse = await super().__call__(raw_request)
        return response


@asynccontextmanager
async def kube_api() -> AsyncIterator[client.ApiClient]:
    """A kubernetes-asyncio client talking HTTP to a fresh emulated cluster."""
    async with LenientEmulator() as emulator, kmock.Server(emulator) as server:
        emulator.resources["v1/pods"] = kmock.ResourceInfo(kind="Pod", namespaced=True)
        emulator.resources["v1/nodes"] = kmock.ResourceInfo(kind="Node", namespaced=False)
        configuration = client.Configuration()
        configuration.host = str(server.url).rstrip("/")
        async with client.ApiClient(configuration) as api:
            yield api


def node(name: str, **spec: Any) -> Any:
    """A ready node with 8 CPUs and 32Gi (status fields overridable through ``spec``)."""
    ready = spec.pop("ready", True)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def plain_pod(name: str, node_name: str, cpu: str, memory: str, labels: dict[str, str] | None = None) -> Any:
    """A running pod on ``node_name`` requesting ``cpu`` and ``memory``."""
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system", "labels": labels or {}},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "x", "resources": resources}]},
        "status": {"phase": "Running"},
    }
