"""NoExecute taints for the API double: the node lifecycle controller's taint eviction and the
``DefaultTolerationSeconds`` admission plugin.

A lost node gets the ``unreachable`` (Ready ``Unknown``) or ``not-ready`` (Ready ``False``)
NoExecute taint. Each pod on it that does not tolerate the taint is evicted at once; one
that tolerates it with ``tolerationSeconds`` is evicted that long after the taint was added
(the least of its matching tolerations), one that tolerates it without is never evicted.
Admission gives every pod that tolerates neither taint a toleration of each for 300 s, so
that is what a pod gets by default. Time is the double's ``clock``: a test makes five
minutes pass with ``pass_time`` instead of waiting them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from tests.integration.executor.kube_store import Obj, Selector, Store

UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
#: What ``DefaultTolerationSeconds`` gives a pod for each of the two taints.
DEFAULT_TOLERATION_SECONDS = 300
EVICTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint``: effect empty or equal; an empty key with ``Exists``
    matches every key; ``Exists`` ignores the value, ``Equal`` (the default) compares it."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    exists = toleration.get("operator") == "Exists"
    if not toleration.get("key"):
        return exists
    if toleration["key"] != taint["key"]:
        return False
    return exists or toleration.get("value", "") == taint.get("value", "")


def eviction_delay(pod: Obj, taint: Obj) -> float | None:
    """Seconds until the taint evicts the pod: 0 if untolerated, None if never."""
    matching = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if tolerates(t, taint)]
    if not matching:
        return 0.0
    seconds = [t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None]
    return max(0.0, float(min(seconds))) if seconds else None


def add_default_tolerations(pod: Obj) -> None:
    """The ``DefaultTolerationSeconds`` admission plugin."""
    tolerations = pod.setdefault("spec", {}).setdefault("tolerations", [])
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        taint = {"key": key, "effect": "NoExecute"}
        if not any(tolerates(t, taint) for t in tolerations):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )


class TaintManager:
    """Evictions due on tainted nodes, carried out by ``evict(namespace, name)`` when due."""

    def __init__(
        self,
        store: Store,
        evict: Callable[[str, str], None],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self._store = store
        self._evict = evict
        self._spawn = spawn
        #: (when, node, taint key, namespace, pod name), in no particular order.
        self._due: list[tuple[float, str, str, str, str]] = []
        self._waiting = False

    def tainted(self, node: str, taint: Obj) -> None:
        """``taint`` (NoExecute) was just put on ``node``: its pods' evictions are scheduled."""
        now = self._store.clock.now()
        for pod in self._store.select(Selector("pods", fields=(("spec.nodeName", node, True),))):
            delay = eviction_delay(pod, taint)
            if delay is not None and not _finished(pod):
                metadata = pod["metadata"]
                self._due.append((now + delay, node, taint["key"], metadata["namespace"], metadata["name"]))
        self.evict_due()
        if self._due and not self._waiting:
            self._waiting = True
            self._spawn(self._wait())

    def untainted(self, node: str) -> None:
        """The node's taints are gone (it is back, or deleted): nothing more is due there."""
        self._due = [due for due in self._due if due[1] != node]

    def evict_due(self) -> None:
        """Evict the pods whose time has come, if their node still carries the taint."""
        now = self._store.clock.now()
        due = [d for d in self._due if d[0] <= now]
        self._due = [d for d in self._due if d[0] > now]
        for _, node, key, namespace, name in due:
            pod = self._store.get("pods", namespace, name)
            taints = ((self._store.get("nodes", "", node) or {}).get("spec") or {}).get("taints") or []
            if (
                pod is not None
                and not _finished(pod)
                and not pod["metadata"].get("deletionTimestamp")
                and pod["spec"].get("nodeName") == node
                and any(t["key"] == key and t["effect"] == "NoExecute" for t in taints)
            ):
                self._evict(namespace, name)

    async def _wait(self) -> None:
        """In real (or sped-up) time, evict each pod when due."""
        try:
            while self._due:
                await self._store.clock.sleep_until(min(due[0] for due in self._due))
                self.evict_due()
        finally:
            self._waiting = False


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
