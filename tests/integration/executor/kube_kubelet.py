"""The kubelet's and the cluster operator's side of the API double: what tests script.

Pods are started, ended, refused and disrupted here as a kubelet, the kube-scheduler or a
drain would write them, and graceful deletion runs as on a real node: ``deletionTimestamp``
first, then (after the kubelet stopped the containers) a terminal phase from the exit code
(Kubernetes 1.27+), then removal unless finalizers hold the pod.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime
from typing import Any

from tests.integration.executor.kube_store import Obj, Selector, Store

#: Resources whose objects the garbage collector deletes with their owner.
OWNED_RESOURCES = ("services", "ingresses")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge(target: Obj, patch: Obj) -> Obj:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


class KubeletScript:
    """Scripting methods of ``KubeDouble`` (which sets these attributes)."""

    store: Store
    termination_seconds: float
    #: How long after its owner pod is removed an owned object is (the collector is asynchronous).
    collection_seconds: float = 0.05
    unreachable: set[str]
    sigterm_exit: dict[str, int]
    _tasks: set[asyncio.Task[None]]

    # --- scripting the cluster ----------------------------------------------------
    def add_namespace(self, name: str, *, terminating: bool = False) -> None:
        phase = "Terminating" if terminating else "Active"
        self.store.put("namespaces", {"metadata": {"name": name}, "status": {"phase": phase}})

    def add_priority_class(self, name: str, value: int = 1000) -> None:
        self.store.put("priorityclasses", {"metadata": {"name": name}, "value": value})

    def pod(self, name: str, namespace: str = "default") -> Obj:
        found = self.store.get("pods", namespace, name)
        if found is None:
            raise KeyError(name)
        return found

    def set_pod(self, name: str, namespace: str = "default", **status: Any) -> Obj:
        """Merge ``status`` into the pod's status, as the kubelet writes it."""
        pod = copy.deepcopy(self.pod(name, namespace))
        merge(pod.setdefault("status", {}), status)
        return self.store.put("pods", pod)

    def bind(self, name: str, node: str, namespace: str = "default") -> Obj:
        """The scheduler's binding; refused (pod stays Pending, unschedulable) when the node's
        ``pods`` capacity is used up by its active pods, as the kube-scheduler does."""
        pod = copy.deepcopy(self.pod(name, namespace))
        target = self.store.get("nodes", "", node) or {}
        capacity = (target.get("status") or {}).get("allocatable", {}).get("pods")
        active = [
            p
            for p in self.store.select(Selector("pods", fields=(("spec.nodeName", node, True),)))
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        if capacity is not None and len(active) >= int(capacity):
            message = f"0/{len(self.store.select(Selector('nodes')))} nodes are available: 1 Too many pods."
            refused = {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
            }
            pod.setdefault("status", {})["conditions"] = [refused]
            return self.store.put("pods", pod)
        pod["spec"]["nodeName"] = node
        conditions = [{"type": "PodScheduled", "status": "True"}]
        pod.setdefault("status", {})["conditions"] = conditions
        return self.store.put("pods", pod)

    def run(
        self, name: str, namespace: str = "default", node: str = "node-1", host_ip: str = "10.0.0.1"
    ) -> Obj:
        """Bound and running, as the kubelet reports a started pod (with its node's and its own IP)."""
        if not self.pod(name, namespace)["spec"].get("nodeName"):
            self.bind(name, node, namespace)
        started = {"running": {"startedAt": now()}}
        return self.set_pod(
            name,
            namespace,
            phase="Running",
            hostIP=host_ip,
            podIP="10.244.0.2",
            containerStatuses=self._containers(name, namespace, started),
        )

    def exit(self, name: str, code: int, namespace: str = "default", reason: str = "") -> Obj:
        """The containers ended with ``code``: Succeeded if 0, else Failed."""
        ended = {
            "terminated": {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error")}
        }
        containers = self._containers(name, namespace, ended)
        return self.set_pod(
            name, namespace, phase="Succeeded" if code == 0 else "Failed", containerStatuses=containers
        )

    def reject(self, name: str, reason: str, message: str, namespace: str = "default") -> Obj:
        """Kubelet admission refused the pod (no container ever started)."""
        return self.set_pod(name, namespace, phase="Failed", reason=reason, message=message)

    def disrupt(self, name: str, reason: str = "EvictionByEvictionAPI", namespace: str = "default") -> None:
        """A drain, preemption or taint eviction: ``DisruptionTarget``, then graceful deletion."""
        pod = copy.deepcopy(self.pod(name, namespace))
        condition = {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": reason}
        pod.setdefault("status", {}).setdefault("conditions", []).append(condition)
        self.store.put("pods", pod)
        self._delete_pod(pod, grace=int(pod["spec"].get("terminationGracePeriodSeconds") or 30))

    def node_condition(self, name: str, ready: bool, since: str | None = None) -> None:
        node = copy.deepcopy(self.store.get("nodes", "", name) or {})
        condition = {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastTransitionTime": since or now(),
        }
        node.setdefault("status", {})["conditions"] = [condition]
        self.store.put("nodes", node)

    def _containers(self, name: str, namespace: str, state: Obj) -> list[Obj]:
        spec = self.pod(name, namespace)["spec"]
        return [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": state,
            }
            for c in spec.get("containers") or []
        ]

    # --- deletion ----------------------------------------------------------------------
    def _delete_pod(self, pod: Obj, grace: int) -> Obj:
        metadata = pod["metadata"]
        node = pod["spec"].get("nodeName")
        if grace == 0 or not node or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return self._finalize(pod)
        if not metadata.get("deletionTimestamp"):
            metadata["deletionTimestamp"] = now()
            metadata["deletionGracePeriodSeconds"] = grace
            self.store.put("pods", pod)
            if node not in self.unreachable:
                self._spawn(self._terminate(metadata.get("namespace", ""), metadata["name"]))
        return pod

    def _finalize(self, pod: Obj) -> Obj:
        """Remove now unless finalizers hold it (then it only carries ``deletionTimestamp``)."""
        if pod["metadata"].get("finalizers"):
            pod["metadata"].setdefault("deletionTimestamp", now())
            pod["metadata"]["deletionGracePeriodSeconds"] = 0
            return self.store.put("pods", pod)
        self.store.remove("pods", pod)
        self._spawn(self._collect_garbage(pod["metadata"].get("uid", "")))
        return pod

    async def _collect_garbage(self, owner_uid: str) -> None:
        """Kubernetes' garbage collector: soon after an owner goes, objects it owns go too."""
        await asyncio.sleep(self.collection_seconds)
        for resource in OWNED_RESOURCES:
            for obj in self.store.select(Selector(resource)):
                owners = obj["metadata"].get("ownerReferences") or []
                if owner_uid and any(ref.get("uid") == owner_uid for ref in owners):
                    self.store.remove(resource, obj)

    async def _terminate(self, namespace: str, name: str) -> None:
        """The kubelet: SIGTERM, a terminal phase from the exit code (1.27+), then removal."""
        await asyncio.sleep(self.termination_seconds)
        pod = self.store.get("pods", namespace, name)
        if pod is None:
            return
        if pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            self.exit(name, self.sigterm_exit.get(name, 143), namespace)
        self._finalize(copy.deepcopy(self.pod(name, namespace)))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
