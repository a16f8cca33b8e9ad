"""Informers: a paginated list, then a watch with bookmarks, kept current in memory.

The node report used to be rebuilt every 10 s from full, unpaginated lists of every node
and every non-terminal pod; on a 100,000-pod cluster that blocked the event loop for
minutes. Here nodes and non-Armada pods are each listed once (page by page: a consistent
read, since the watch cache would ignore ``limit``) and then followed by a watch, which is
renewed from its last resource version (kept fresh by bookmarks) when the server ends it
or it fails (429, 5xx, a reset), and relisted only after a 410. Non-Armada pods are
selected server-side (not labelled as Armada's, bound to a node, not terminal: pods leaving
that selection arrive as DELETED) and reduced to what the report needs: their node and
requests, added to and subtracted from a per-node total as they come and go. Node reports
are rebuilt only for nodes that changed.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from armada.executor.backends.kube_calls import Json, KubeCalls, after_watch_failure
from armada.executor.backends.kube_nodes import node_report, pod_node, pod_requests
from armada.executor.backends.slices import Slices
from armada.executor.podspec import RUN_ID_LABEL
from armada.executor.simulated_cordons import CORDON_REASON_ANNOTATION
from armada.model.leases import NodeReport

log = structlog.get_logger(__name__)

Change = Callable[[str, Any, Any], None]


def _key(obj: Json) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


class Informer:
    """Objects of one list call (with selectors), by ``namespace/name``; ``on_change(key, old, new)``."""

    def __init__(
        self,
        calls: KubeCalls,
        list_call: Callable[..., Awaitable[Any]],
        on_change: Change,
        *,
        slim: Callable[[Json], Any] = lambda obj: obj,
        watch_seconds: float = 300.0,
        **selectors: Any,
    ) -> None:
        self._calls = calls
        self._list = list_call
        self._on_change = on_change
        self._slim = slim
        self._watch_seconds = watch_seconds
        self._selectors = selectors
        self.items: dict[str, Any] = {}
        #: Set once the first list has been applied.
        self.synced = asyncio.Event()

    async def run(self) -> None:
        """List, then watch for ever; resume from the last version after a failure, relist
        only after a 410."""
        backoff = self._calls.backoff()
        version = ""
        while True:
            try:
                if not version:
                    version = await self._relist()
                    self.synced.set()
                events = self._calls.watch(self._list, version, self._watch_seconds, **self._selectors)
                async for event in events:
                    version = str((event.object.get("metadata") or {}).get("resourceVersion") or version)
                    if event.type in ("ADDED", "MODIFIED"):
                        self._put(event.object)
                    elif event.type == "DELETED":
                        self._drop(_key(event.object))
                    backoff.reset()
            except Exception as exc:
                version, delay = after_watch_failure(exc, version, backoff)
                log.warning(
                    "informer failed", selectors=self._selectors, error=repr(exc), retry_in=round(delay, 2)
                )
                await asyncio.sleep(delay)

    async def _relist(self) -> str:
        """Apply a full list page by page (objects not in it are dropped); its version."""
        fresh: set[str] = set()
        version, slices = "", Slices()
        async for page, page_version in self._calls.pages(self._list, **self._selectors):
            version = page_version
            for obj in page:
                await slices.tick()
                fresh.add(_key(obj))
                self._put(obj)
        for key in [k for k in self.items if k not in fresh]:
            await slices.tick()
            self._drop(key)
        return version

    def _put(self, obj: Json) -> None:
        key = _key(obj)
        new = self._slim(obj)
        old = self.items.get(key)
        self.items[key] = new
        self._on_change(key, old, new)

    def _drop(self, key: str) -> None:
        old = self.items.pop(key, None)
        if old is not None:
            self._on_change(key, old, None)


SlimPod = tuple[str, tuple[tuple[str, int], ...]]

#: Non-Armada pods that may use a node's resources: not terminal. Selected by the API
#: server, so finished pods never reach the executor.
OTHER_PODS_FIELDS = "status.phase!=Succeeded,status.phase!=Failed"


def slim_pod(pod: Json) -> SlimPod:
    """What the node report needs of a non-Armada pod: its node (bound, else nominated by
    preemption; '' if neither) and its requests.

    Tuples of strings and integers: the garbage collector stops tracking them.
    """
    return pod_node(pod), tuple(pod_requests(pod).items())


def slim_node(node: Json) -> Json:
    """What the node report needs of a node (a real node's JSON lists every cached image)."""
    metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    annotations = metadata.get("annotations") or {}
    cordon = (
        {CORDON_REASON_ANNOTATION: annotations[CORDON_REASON_ANNOTATION]}
        if CORDON_REASON_ANNOTATION in annotations
        else {}
    )
    return {
        "metadata": {
            "name": metadata.get("name", ""),
            "labels": metadata.get("labels") or {},
            "annotations": cordon,
        },
        "spec": {"taints": spec.get("taints") or [], "unschedulable": spec.get("unschedulable", False)},
        "status": {"allocatable": status.get("allocatable") or {}, "conditions": ready},
    }


class NodeView:
    """Node reports kept current from a node informer and a non-Armada pod informer."""

    def __init__(self, calls: KubeCalls, not_ready_grace: float, watch_seconds: float) -> None:
        self._grace = not_ready_grace
        self._usage: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._reports: dict[str, NodeReport] = {}
        self._dirty: set[str] = set()
        #: Nodes not Ready: their report changes with time alone (the grace period runs out).
        self._not_ready: set[str] = set()
        self.nodes = Informer(
            calls, calls.core.list_node, self._node_changed, slim=slim_node, watch_seconds=watch_seconds
        )
        self.pods = Informer(
            calls,
            calls.core.list_pod_for_all_namespaces,
            self._pod_changed,
            slim=slim_pod,
            watch_seconds=watch_seconds,
            label_selector=f"!{RUN_ID_LABEL}",
            field_selector=OTHER_PODS_FIELDS,
        )

    def tasks(self) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(self.nodes.run(), name="kube-nodes"),
            asyncio.create_task(self.pods.run(), name="kube-other-pods"),
        ]

    async def synced(self) -> None:
        await self.nodes.synced.wait()
        await self.pods.synced.wait()

    def _node_changed(self, key: str, old: Json | None, new: Json | None) -> None:
        name = key.removeprefix("/")
        self._not_ready.discard(name)
        if new is None:
            self._reports.pop(name, None)
            self._dirty.discard(name)
            return
        self._dirty.add(name)
        conditions = (new.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            self._not_ready.add(name)

    def _pod_changed(self, key: str, old: SlimPod | None, new: SlimPod | None) -> None:
        for pod, sign in ((old, -1), (new, 1)):
            if pod is None or not pod[0]:  # no node: neither bound nor nominated
                continue
            node, requests = pod
            used = self._usage[node]
            for name, units in requests:
                used[name] += sign * units
            used["pods"] += sign
            self._dirty.add(node)

    def unreachable(self, name: str) -> bool:
        """Whether the node exists and is not Ready (its kubelet may not act on deletions)."""
        node = self.nodes.items.get(f"/{name}")
        if node is None:
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        return not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def cordoned(self) -> list[str]:
        """Nodes carrying the cordon annotation: those the executor cordoned on the server's order."""
        return sorted(
            key.removeprefix("/")
            for key, node in self.nodes.items.items()
            if CORDON_REASON_ANNOTATION in ((node.get("metadata") or {}).get("annotations") or {})
        )

    def reports(self) -> list[NodeReport]:
        """Every node's report, rebuilt only where a node or its pods changed."""
        for name in self._dirty | self._not_ready:
            node = self.nodes.items.get(f"/{name}")
            if node is not None:
                self._reports[name] = node_report(node, self._usage.get(name, {}), self._grace)
        self._dirty.clear()
        return list(self._reports.values())
