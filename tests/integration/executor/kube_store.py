"""The state behind the Kubernetes API double: objects, resource versions, history, watches.

It keeps what an API server's storage keeps and in the same way: one global, increasing
``resourceVersion``; every change recorded in a history sized as kube-apiserver's watch
cache sizes its ring (``watch_cache.go``): at least 100 changes; when full, doubled (up to
102,400) while its oldest change is younger than 75 s, halved when even its newest quarter
is older, else the oldest change dropped. So a watch may resume from any version of the
last 75 s (within the upper bound) and one older than what the ring holds gets 410 Gone;
``compact`` forgets everything, as etcd compaction does for ``continue`` tokens. Selectors
are evaluated server-side, with the field labels a real server supports (others are a 400).
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import itertools
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.integration.executor.kube_clock import Clock

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (resource, namespace, name)

#: The watch cache keeps at least this long of history (``eventFreshDuration``) …
FRESH_SECONDS = 75.0
#: … in a ring of this many changes at least and at most (its default bounds).
HISTORY_BOUNDS = (100, 100 * 1024)

#: Field labels the API server accepts in field selectors, per resource.
FIELD_LABELS = {
    "pods": {
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "status.phase",
        "spec.schedulerName",
        "status.nominatedNodeName",
    },
    "nodes": {"metadata.name", "spec.unschedulable"},
    "namespaces": {"metadata.name", "status.phase"},
    "priorityclasses": {"metadata.name"},
    "resourcequotas": {"metadata.name", "metadata.namespace"},
    "services": {"metadata.name", "metadata.namespace"},
    "ingresses": {"metadata.name", "metadata.namespace"},
    "events": {
        "metadata.name",
        "metadata.namespace",
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "reason",
        "type",
        "source",
    },
}


class ApiError(Exception):
    """An error the double answers with a ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details


class SelectorError(ValueError):
    """A selector the API server would refuse (400 BadRequest)."""


def _field(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = (value or {}).get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def field_matcher(resource: str, selector: str) -> list[tuple[str, str, bool]]:
    """``spec.nodeName=x,status.phase!=Failed`` as (path, value, equal) terms."""
    terms: list[tuple[str, str, bool]] = []
    for term in filter(None, (t.strip() for t in selector.split(","))):
        match = re.fullmatch(r"([\w.]+)\s*(==|=|!=)\s*(.*)", term)
        if not match:
            raise SelectorError(f'invalid field selector: "{term}"')
        path, op, value = match.groups()
        if path not in FIELD_LABELS.get(resource, set()):
            raise SelectorError(f'field label not supported: "{path}"')
        terms.append((path, value, op != "!="))
    return terms


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_TERM = re.compile(r"\s*(!?)([\w./-]+)\s*(?:(==|=|!=)\s*([\w.-]*)|(in|notin)\s*\(([^)]*)\))?\s*")


def label_matcher(selector: str) -> list[tuple[str, str, frozenset[str]]]:
    """Terms of a label selector: (key, op, values) with op in exists/absent/in/notin."""
    terms: list[tuple[str, str, frozenset[str]]] = []
    rest = selector.strip()
    while rest:
        match = _LABEL_TERM.match(rest)
        if not match or not match.group(0):
            raise SelectorError(f"unable to parse requirement: {selector!r}")
        bang, key, op, value, set_op, values = match.groups()
        if bang:
            terms.append((key, "absent", frozenset()))
        elif op:
            if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
                problem = f"values[0][{key}]: Invalid value: {value!r}"
                raise SelectorError(f"unable to parse requirement: {problem}")
            terms.append((key, "notin" if op == "!=" else "in", frozenset({value})))
        elif set_op:
            terms.append((key, set_op, frozenset(v.strip() for v in values.split(",") if v.strip())))
        else:
            terms.append((key, "exists", frozenset()))
        rest = rest[match.end() :]
        if rest.startswith(","):
            rest = rest[1:]
        elif rest:
            raise SelectorError(f"unable to parse requirement: {selector!r}")
    return terms


@dataclass(frozen=True)
class Selector:
    """A list or watch filter: namespace, label and field selectors."""

    resource: str
    namespace: str = ""
    labels: tuple[tuple[str, str, frozenset[str]], ...] = ()
    fields: tuple[tuple[str, str, bool], ...] = ()

    @classmethod
    def parse(cls, resource: str, namespace: str, labels: str, fields: str) -> Selector:
        return cls(resource, namespace, tuple(label_matcher(labels)), tuple(field_matcher(resource, fields)))

    def matches(self, resource: str, obj: Obj) -> bool:
        metadata = obj.get("metadata") or {}
        if resource != self.resource or (self.namespace and metadata.get("namespace") != self.namespace):
            return False
        have = metadata.get("labels") or {}
        for key, op, values in self.labels:
            ok = {
                "exists": key in have,
                "absent": key not in have,
                "in": have.get(key) in values,
                "notin": have.get(key) not in values,
            }[op]
            if not ok:
                return False
        return all((_field(obj, path) == value) == equal for path, value, equal in self.fields)


@dataclass
class Change:
    """One entry of the history: what a watch replays."""

    version: int
    kind: str  # ADDED, MODIFIED, DELETED
    resource: str
    obj: Obj
    #: The object before a MODIFIED (to tell a watch that it entered or left its selection).
    old: Obj | None = None
    #: When it was recorded, by the store's clock.
    at: float = 0.0

    def seen_by(self, selector: Selector) -> Change | None:
        """This change as a watch with ``selector`` gets it, if at all.

        As the API server's watch cache does: an object that starts matching the
        selection is ADDED to that watch, one that stops matching is DELETED from it, and
        that DELETED carries the object as it was when it last matched (``cache_watcher``
        sends the previous object), with the new resource version.
        """
        now = selector.matches(self.resource, self.obj)
        if self.kind != "MODIFIED":
            return self if now else None
        before = self.old is not None and selector.matches(self.resource, self.old)
        if now == before:
            return self if now else None
        if now:
            return Change(self.version, "ADDED", self.resource, self.obj)
        previous = copy.deepcopy(self.old or {})
        previous.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        return Change(self.version, "DELETED", self.resource, previous)


@dataclass
class Watcher:
    """An open watch: its filter and the queue its stream reads from."""

    selector: Selector
    queue: asyncio.Queue[Change | None] = field(default_factory=asyncio.Queue)


class Gone(Exception):
    """A resource version older than the history window (HTTP 410 / watch ERROR 410)."""


class Store:
    """Objects by (resource, namespace, name) with a global resource version."""

    def __init__(self, clock: Clock | None = None, bounds: tuple[int, int] = HISTORY_BOUNDS) -> None:
        self.version = 1
        self.objects: dict[Key, Obj] = {}
        self.clock = clock or Clock()
        self.history: deque[Change] = deque()
        self.watchers: list[Watcher] = []
        #: The version of the last etcd compaction (``continue`` tokens from before it get 410).
        self.compacted = 0
        self._bounds = bounds
        self._capacity = bounds[0]
        #: Whether a change has left the ring since it was last rebuilt (then the oldest
        #: version a watch may start from is its first change's, not the rebuild's).
        self._trimmed = False
        #: Every key, kept sorted as objects come and go (continue tokens page through it)
        #: rather than re-sorted on the first page after each write.
        self._keys: list[Key] = []

    @property
    def oldest(self) -> int:
        """The oldest version a watch may still start from."""
        return self.history[0].version - 1 if self._trimmed else self.compacted

    def compact(self) -> None:
        """Forget the whole history, as etcd compaction does: older versions get 410."""
        self.version += 1
        self.compacted = self.version
        self.history.clear()
        self._trimmed = False

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get((resource, namespace, name))

    def select(self, selector: Selector) -> list[Obj]:
        """Matching objects in key order (the order continue tokens page through)."""
        return self.page(selector, None, 0)

    def page(self, selector: Selector, after: Key | None, limit: int) -> list[Obj]:
        """Up to ``limit`` (0: all) matching objects after key ``after``, in key order."""
        start = bisect.bisect_right(self._keys, after) if after is not None else 0
        found: list[Obj] = []
        for key in self._keys[start:] if start else self._keys:
            obj = self.objects.get(key)
            if obj is not None and selector.matches(key[0], obj):
                found.append(obj)
                if limit and len(found) == limit:
                    break
        return found

    def put(self, resource: str, obj: Obj, kind: str = "") -> Obj:
        """Create or replace ``obj``, stamping a new resource version; notifies watchers."""
        metadata = obj.setdefault("metadata", {})
        key = (resource, metadata.get("namespace", ""), metadata["name"])
        old = self.objects.get(key)
        kind = kind or ("MODIFIED" if old is not None else "ADDED")
        self.version += 1
        metadata["resourceVersion"] = str(self.version)
        if kind == "DELETED":
            if self.objects.pop(key, None) is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]
        else:
            if old is None:
                bisect.insort(self._keys, key)
            self.objects[key] = obj
        before = copy.deepcopy(old) if kind == "MODIFIED" else None
        self._record(Change(self.version, kind, resource, copy.deepcopy(obj), before))
        return obj

    def remove(self, resource: str, obj: Obj) -> None:
        self.put(resource, obj, "DELETED")

    def _record(self, change: Change) -> None:
        change.at = self.clock.now()
        self._make_room(change.at)
        self.history.append(change)
        for watcher in self.watchers:
            seen = change.seen_by(watcher.selector)
            if seen is not None:
                watcher.queue.put_nowait(seen)

    def _make_room(self, now: float) -> None:
        """The watch cache's ``resizeCacheLocked``, then the oldest change out if still full."""
        history, (lower, upper) = self.history, self._bounds
        if len(history) < self._capacity:
            return
        if now - history[0].at < FRESH_SECONDS:
            self._capacity = min(self._capacity * 2, upper)
        elif now - history[len(history) - self._capacity // 4].at > FRESH_SECONDS:
            self._capacity = max(self._capacity // 2, lower)
        while len(history) >= self._capacity:
            history.popleft()
            self._trimmed = True

    def since(self, version: int, selector: Selector) -> Iterable[Change]:
        """Changes after ``version`` matching ``selector``; Gone if the ring no longer holds it."""
        if version < self.oldest:
            raise Gone(f"too old resource version: {version} ({self.oldest})")
        newer = list(itertools.takewhile(lambda c: c.version > version, reversed(self.history)))
        seen = (c.seen_by(selector) for c in reversed(newer))
        return [c for c in seen if c is not None]

    def subscribe(self, selector: Selector) -> Watcher:
        watcher = Watcher(selector)
        self.watchers.append(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        self.watchers.remove(watcher)
