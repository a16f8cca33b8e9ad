"""The kubelet's and the cluster operator's side of the API double: what tests script.

Pods are started, ended, refused and disrupted here as a kubelet, the kube-scheduler, the
taint manager (``kube_taints``) or a drain would write them, and graceful deletion runs as
on a real node: ``deletionTimestamp`` first, then (after the kubelet stopped the
containers) a terminal phase from the exit code (Kubernetes 1.27+), then removal unless
finalizers hold the pod.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime
from typing import Any

from tests.integration.executor.kube_store import Obj, Selector, Store
from tests.integration.executor.kube_taints import (
    EVICTION_MESSAGE,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    TaintManager,
)

#: Resources whose objects the garbage collector deletes with their owner.
OWNED_RESOURCES = ("services", "ingresses")
_UNKNOWN = "The container could not be located when the pod was terminated"


def _disruption(reason: str, message: str) -> Obj:
    return {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message}


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
    taints: TaintManager
    termination_seconds: float
    #: How long after its owner pod is removed an owned object is (the collector is asynchronous).
    collection_seconds: float = 0.05
    unreachable: set[str]
    _events: int = 0
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

    def nominate(self, name: str, node: str, namespace: str = "default") -> Obj:
        """kube-scheduler preempted pods on ``node`` for this one: nominated, not yet bound
        (it binds once the victims are gone)."""
        pod = copy.deepcopy(self.pod(name, namespace))
        waiting = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            "1 No preemption victims found for incoming pod.",
        }
        pod.setdefault("status", {}).update(nominatedNodeName=node, conditions=[waiting])
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

    def disrupt(
        self, name: str, reason: str = "EvictionByEvictionAPI", namespace: str = "default", message: str = ""
    ) -> None:
        """A drain, preemption or taint eviction: ``DisruptionTarget``, then graceful deletion."""
        pod = copy.deepcopy(self.pod(name, namespace))
        condition = _disruption(reason, message or reason)
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

    # --- kubelet-written outcomes -----------------------------------------------------
    def evict(self, name: str, resource: str = "memory", namespace: str = "default") -> Obj:
        """Node-pressure eviction: the kubelet kills the containers and keeps the pod, Failed
        with reason ``Evicted`` and (1.26+) ``DisruptionTarget`` ``TerminationByKubelet``."""
        message = f"The node was low on resource: {resource}. "
        return self._kubelet_ended(name, namespace, "Evicted", message, 137)

    def shutdown(self, name: str, namespace: str = "default") -> Obj:
        """Graceful node shutdown: Failed, reason ``Terminated``, ``DisruptionTarget``."""
        message = "Pod was terminated in response to imminent node shutdown."
        return self._kubelet_ended(name, namespace, "Terminated", message, 143)

    def start_error(self, name: str, namespace: str = "default") -> Obj:
        """The runtime could not start the container (no such executable): exit 128, ``StartError``."""
        message = (
            'failed to create containerd task: exec: "nope": executable file not found in $PATH: unknown'
        )
        ended = {"terminated": {"exitCode": 128, "reason": "StartError", "message": message}}
        containers = self._containers(name, namespace, ended)
        return self.set_pod(name, namespace, phase="Failed", containerStatuses=containers)

    def container_unknown(self, name: str, namespace: str = "default") -> Obj:
        """A kubelet back from a restart or a partition that cannot find the containers."""
        ended = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown", "message": _UNKNOWN}}
        containers = self._containers(name, namespace, ended)
        return self.set_pod(name, namespace, phase="Failed", containerStatuses=containers)

    def _kubelet_ended(self, name: str, namespace: str, reason: str, message: str, code: int) -> Obj:
        pod = copy.deepcopy(self.pod(name, namespace))
        conditions = pod.setdefault("status", {}).setdefault("conditions", [])
        conditions.append(_disruption("TerminationByKubelet", message))
        self.store.put("pods", pod)
        ended = {"terminated": {"exitCode": code, "reason": "Error"}}
        containers = self._containers(name, namespace, ended)
        return self.set_pod(
            name, namespace, phase="Failed", reason=reason, message=message, containerStatuses=containers
        )

    # --- pending for reasons only Events tell -----------------------------------------
    def image_not_found(self, name: str, namespace: str = "default") -> Obj:
        """The image does not exist: the pull failed (a Warning Event says why), and the
        status soon shows only ``ImagePullBackOff``."""
        image = self.pod(name, namespace)["spec"]["containers"][0].get("image", "")
        self.event(
            name,
            "Failed",
            f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and '
            f'unpack image "docker.io/library/{image}:latest": failed to resolve reference: not found',
            namespace,
        )
        waiting = {"waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}}
        return self._waiting(name, namespace, waiting)

    def missing_volume(self, name: str, secret: str, namespace: str = "default") -> Obj:
        """A Secret volume that does not exist: ``ContainerCreating`` for ever, and ``FailedMount``."""
        message = f'MountVolume.SetUp failed for volume "{secret}" : secret "{secret}" not found'
        self.event(name, "FailedMount", message, namespace)
        return self._waiting(name, namespace, {"waiting": {"reason": "ContainerCreating"}})

    def event(self, pod: str, reason: str, message: str, namespace: str = "default") -> None:
        """A Warning Event about ``pod``, as the kubelet records it."""
        involved = {
            "kind": "Pod",
            "name": pod,
            "namespace": namespace,
            "uid": self.pod(pod, namespace)["metadata"]["uid"],
        }
        self._events += 1
        self.store.put(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{pod}.{self._events:016x}", "namespace": namespace},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": "Warning",
                "count": 1,
                "source": {"component": "kubelet"},
            },
        )

    def _waiting(self, name: str, namespace: str, state: Obj) -> Obj:
        if not self.pod(name, namespace)["spec"].get("nodeName"):
            self.bind(name, "node-1", namespace)
        return self.set_pod(name, namespace, containerStatuses=self._containers(name, namespace, state))

    # --- node lifecycle ----------------------------------------------------------------
    def _pods_on(self, node: str) -> list[Obj]:
        return self.store.select(Selector("pods", fields=(("spec.nodeName", node, True),)))

    def lose_node(self, name: str) -> None:
        """The node stops reporting: Ready ``Unknown``, the ``unreachable`` taints and its
        kubelet out of reach. The taint manager evicts its pods as their tolerations say
        (300 s by default: ``pass_time``); evicted, they stay Terminating with phase Running
        for ever (kubernetes#51333), since no kubelet confirms them stopped."""
        self.unreachable.add(name)
        self._taint_node(name, "Unknown", UNREACHABLE_TAINT)

    def node_not_ready(self, name: str) -> None:
        """The kubelet reports the node not ready (its runtime or network is down): Ready
        ``False`` and the ``not-ready`` taints; evicted pods are stopped by the kubelet."""
        self._taint_node(name, "False", NOT_READY_TAINT)

    def pass_time(self, seconds: float) -> None:
        """``seconds`` pass on the cluster at once: taint evictions that came due happen now."""
        self.store.clock.advance(seconds)
        self.taints.evict_due()

    def _taint_node(self, name: str, ready: str, key: str) -> None:
        taints = [
            {"key": key, "effect": effect, "timeAdded": now()} for effect in ("NoSchedule", "NoExecute")
        ]
        self._set_node(name, ready, taints)
        self.taints.tainted(name, taints[1])

    def _evict_for_taint(self, namespace: str, name: str) -> None:
        self.disrupt(name, "DeletionByTaintManager", namespace, EVICTION_MESSAGE)

    def restore_node(self, name: str, *, kubelet_restarted: bool = False) -> None:
        """The kubelet is back: the containers of pods deleted meanwhile are gone without a
        status (``ContainerStatusUnknown``, exit 137) and the pods removed; after a kubelet
        restart, so are those of pods still running."""
        self.unreachable.discard(name)
        self.taints.untainted(name)
        self._set_node(name, "True", [])
        for pod in self._pods_on(name):
            metadata = pod["metadata"]
            finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if metadata.get("deletionTimestamp"):
                if not finished:
                    self.container_unknown(metadata["name"], metadata["namespace"])
                self._finalize(copy.deepcopy(self.pod(metadata["name"], metadata["namespace"])))
            elif kubelet_restarted and not finished:
                self.container_unknown(metadata["name"], metadata["namespace"])

    def delete_node(self, name: str) -> None:
        """The Node object is deleted; PodGC then fails (1.26+) and force-deletes its pods."""
        node = self.store.get("nodes", "", name)
        self.taints.untainted(name)
        if node is not None:
            self.store.remove("nodes", node)
        for found in self._pods_on(name):
            pod = copy.deepcopy(found)
            status = pod.setdefault("status", {})
            status.setdefault("conditions", []).append(
                _disruption("DeletionByPodGC", "PodGC: node no longer exists")
            )
            if status.get("phase") not in ("Succeeded", "Failed"):
                status["phase"] = "Failed"
            self.store.put("pods", pod)
            self._finalize(pod)

    def _set_node(self, name: str, ready: str, taints: list[Obj]) -> None:
        node = copy.deepcopy(self.store.get("nodes", "", name) or {"metadata": {"name": name}})
        reason = {"True": "KubeletReady", "False": "KubeletNotReady"}.get(ready, "NodeStatusUnknown")
        condition = {"type": "Ready", "status": ready, "reason": reason, "lastTransitionTime": now()}
        node.setdefault("status", {})["conditions"] = [condition]
        node.setdefault("spec", {})["taints"] = taints
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
