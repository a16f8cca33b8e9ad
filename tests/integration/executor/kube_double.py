"""A Kubernetes API test double that behaves like an API server (and a little like a kubelet).

A small aiohttp server over ``kube_store.Store``, spoken to by the real kubernetes-asyncio
client over HTTP. It does what the executor meets on a real cluster and an instant,
permissive fake would hide: selectors evaluated server-side, ``resourceVersion`` and
``limit``/``continue`` on lists (a ``resourceVersion=0`` list comes from the watch cache,
which ignores ``limit``), watches that end on their own and answer 410 when started too
far back, objects entering or leaving a watch's selection as ADDED/DELETED, BOOKMARK
events, graceful deletion (terminal phase first, removal after, finalizers kept),
admission (namespace exists and is not terminating, PriorityClass exists, quotas → 403
with the API server's own message), and scriptable faults: latency, 429 with
``Retry-After``, 5xx, connection resets, and failures *after* the change was applied (the
ambiguous create). Tests drive the kubelet's side with ``run``/``exit``/``disrupt``/
``reject``, so every outcome is a pod status a real kubelet would write.

The bad day (issue 45): an API-server ``restart`` (watches cut, 429 while the watch cache
rebuilds), resets and ``ERROR`` events mid-stream, 422 Invalid with ``details.causes``,
quota "status unknown" and webhook refusals (``kube_admission``), node loss, return and
deletion, kubelet evictions, shutdowns, ``StartError`` and ``ContainerStatusUnknown``,
Warning Events for pending reasons (``kube_kubelet``), a skewed server clock, paginated
lists read from one snapshot, the watch cache's bookmark timing and its history window
(75 s at least, ``kube_store``), measured by the double's own ``clock`` (``kube_clock``).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import re
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp.web
from kubernetes_asyncio import client

from tests.integration.executor.kube_admission import Admission
from tests.integration.executor.kube_clock import Clock
from tests.integration.executor.kube_kubelet import KubeletScript, merge
from tests.integration.executor.kube_podlogs import PodLogs, flag
from tests.integration.executor.kube_services import ServiceAllocator
from tests.integration.executor.kube_store import (
    ApiError,
    Change,
    Gone,
    Obj,
    Selector,
    SelectorError,
    Store,
)
from tests.integration.executor.kube_taints import TaintManager, add_default_tolerations

Web = aiohttp.web


def status_body(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return body | ({"details": details} if details else {})


@dataclass
class Fault:
    """A scripted failure of requests whose ``METHOD path`` matches ``match`` (a regex)."""

    match: str
    status: int = 0
    retry_after: int | None = None
    reset: bool = False
    #: Apply the request first, then fail: the client cannot tell whether it happened.
    after: bool = False
    delay: float = 0.0
    times: int = 1
    message: str = "injected"


@dataclass
class Hold:
    """Holds the answer to the first request matching ``match`` (already computed) until released."""

    match: str
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


_ROUTE = re.compile(
    r"^/(?:api/v1|apis/scheduling\.k8s\.io/v1|apis/networking\.k8s\.io/v1)(?:/namespaces/(?P<ns>[^/]+))?"
    r"/(?P<res>pods|nodes|namespaces|priorityclasses|resourcequotas|services|ingresses|events)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|log))?$"
)
_KINDS = {
    "pods": "Pod",
    "nodes": "Node",
    "namespaces": "Namespace",
    "priorityclasses": "PriorityClass",
    "resourcequotas": "ResourceQuota",
    "services": "Service",
    "ingresses": "Ingress",
    "events": "Event",
}
#: The watch cache's last bookmark comes this long before a watch's deadline.
_FINAL_BOOKMARK_SECONDS = 2.0
#: Paginated lists whose snapshot is kept at once (older continue tokens get 410).
_SNAPSHOTS = 64
_API_VERSIONS = {"priorityclasses": "scheduling.k8s.io/v1", "ingresses": "networking.k8s.io/v1"}


class KubeDouble(KubeletScript, ServiceAllocator, PodLogs):
    """The API server double; tests script the cluster through its methods."""

    def __init__(self) -> None:
        self.store = Store()
        self.faults: list[Fault] = []
        #: Added to every request (a slow or distant API server).
        self.latency = 0.0
        #: A watch ends after this long at most (a real server ends them after 5-10 min).
        self.watch_seconds = 30.0
        #: Seconds between BOOKMARK events on idle watches that allow them (the watch cache
        #: sends about one a minute, and one more shortly before the watch's deadline).
        self.bookmark_seconds = 60.0
        #: How long a kubelet takes to stop a gracefully deleted pod's containers.
        self.termination_seconds = 0.05
        #: Nodes whose kubelet is unreachable: their pods never finish terminating.
        self.unreachable: set[str] = set()
        #: Exit code a pod's containers give on SIGTERM (pod name → code; default 143).
        self.sigterm_exit: dict[str, int] = {}
        #: Validation, quotas and webhooks of pod creates (``admission.add_quota`` …).
        self.admission = Admission(self.store)
        #: NoExecute taint evictions on lost nodes, when the pods' tolerations say.
        self.taints = TaintManager(self.store, self._evict_for_taint, self._spawn)
        #: Container logs by (namespace, pod, container): plain text, served as it is.
        self.logs: dict[tuple[str, str, str], str] = {}
        #: Container logs as the kubelet keeps them, (time, line) each, for pods/log with
        #: ``timestamps``, ``sinceSeconds``/``sinceTime``, ``tailLines`` and ``limitBytes``;
        #: ``previous_logs`` those of the container's previous (crashed) instance.
        self.log_lines: dict[tuple[str, str, str], list[tuple[float, str]]] = defaultdict(list)
        self.previous_logs: dict[tuple[str, str, str], list[tuple[float, str]]] = defaultdict(list)
        #: Every request as ``METHOD path?query`` (for tests that count calls).
        self.requests: list[str] = []
        #: The bearer token of every request.
        self.tokens: list[str] = []
        #: Requests being answered now, and the most ever at once, per method.
        self.in_flight: dict[str, int] = defaultdict(int)
        self.max_in_flight: dict[str, int] = defaultdict(int)
        #: False while a restarted API server rebuilds its watch cache: watches get 429
        #: (Kubernetes 1.31+) with ``Retry-After: restart_retry_after``; lists go to etcd.
        self.cache_ready = True
        #: How far the API server's clock is behind the executor's (its timestamps look old).
        self.clock_behind_seconds = 0.0
        self.restart_retry_after = 1
        #: Watch requests refused while the cache was not ready.
        self.refused_watches: list[str] = []
        self._streams: dict[int, Web.Request] = {}
        #: Snapshots of paginated lists being read, by continue token (oldest first).
        self._snapshots: dict[str, list[Obj]] = {}
        self._holds: list[Hold] = []
        self._request_seen = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()
        self.node_ports: set[int] = set()
        for name in ("default", "kube-system"):
            self.add_namespace(name)

    @property
    def clock(self) -> Clock:
        """The double's time (watch-cache history, taint evictions): tests may ``advance`` it."""
        return self.store.clock

    def hold(self, match: str) -> Hold:
        """Delay the answer to the next request matching ``match`` (a slow list on a big cluster)."""
        held = Hold(match)
        self._holds.append(held)
        return held

    async def wait_for_request(self, match: str, after: int = 0) -> None:
        """Wait until a request matching ``match`` arrived, after the first ``after`` requests."""
        async with self._request_seen:
            await self._request_seen.wait_for(
                lambda: any(re.search(match, line) for line in self.requests[after:])
            )

    # --- HTTP ------------------------------------------------------------------------
    async def handle(self, request: Web.Request) -> Web.StreamResponse:
        method = request.method
        self.in_flight[method] += 1
        self.max_in_flight[method] = max(self.max_in_flight[method], self.in_flight[method])
        try:
            return await self._handle(request)
        finally:
            self.in_flight[method] -= 1

    async def _handle(self, request: Web.Request) -> Web.StreamResponse:
        line = f"{request.method} {request.path_qs}"
        self.tokens.append(request.headers.get("Authorization", "").removeprefix("Bearer "))
        async with self._request_seen:
            self.requests.append(line)
            self._request_seen.notify_all()
        if self.latency:
            await asyncio.sleep(self.latency)
        fault = next((f for f in self.faults if f.times > 0 and re.search(f.match, line)), None)
        if fault is not None:
            fault.times -= 1
            await asyncio.sleep(fault.delay)
            if not fault.after:
                return self._fail(request, fault)
        if not self.cache_ready and flag(request.query, "watch"):
            async with self._request_seen:
                self.refused_watches.append(line)
                self._request_seen.notify_all()
            headers = {"Retry-After": str(self.restart_retry_after)}
            body = status_body(429, "TooManyRequests", "Too many requests: storage is (re)initializing")
            return Web.json_response(body, status=429, headers=headers)
        try:
            response = await self._route(request)
        except ApiError as exc:
            body = status_body(exc.code, exc.reason, exc.message, exc.details)
            return Web.json_response(body, status=exc.code)
        held = next((h for h in self._holds if not h.arrived.is_set() and re.search(h.match, line)), None)
        if held is not None:
            held.arrived.set()
            await held.release.wait()
        return self._fail(request, fault) if fault is not None else response

    def _fail(self, request: Web.Request, fault: Fault) -> Web.StreamResponse:
        if fault.reset:
            assert request.transport is not None
            request.transport.abort()
            return Web.Response(status=500)
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
        reason = "TooManyRequests" if fault.status == 429 else "InternalError"
        body = status_body(fault.status, reason, fault.message)
        return Web.json_response(body, status=fault.status or 500, headers=headers)

    async def _route(self, request: Web.Request) -> Web.StreamResponse:
        match = _ROUTE.match(request.path)
        if match is None:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({request.path})"
            )
        ns, res, name, sub = (
            match.group("ns") or "",
            match.group("res"),
            match.group("name"),
            match.group("sub"),
        )
        if sub == "log":
            return self.serve_log(ns, name or "", request.query)
        if request.method == "GET" and name is None:
            if request.query.get("watch") in ("true", "True", "1"):
                return await self._watch(request, res, ns)
            return Web.json_response(self._list(res, ns, request.query))
        body = await request.json() if request.can_read_body else {}
        if request.method == "POST":
            return Web.json_response(self._create(res, ns, body), status=201)
        current = self.store.get(res, ns, name or "")
        if current is None:
            raise ApiError(404, "NotFound", f'{res} "{name}" not found')
        if request.method == "GET":
            return Web.json_response(current)
        if request.method == "PATCH":
            patched = merge(copy.deepcopy(current), body)
            if (
                res == "pods"
                and current["metadata"].get("finalizers")
                and not patched["metadata"].get("finalizers")
            ) and patched["metadata"].get("deletionTimestamp"):
                return Web.json_response(self._finalize(patched))
            return Web.json_response(self.store.put(res, patched))
        if request.method == "DELETE":
            grace = request.query.get("gracePeriodSeconds", body.get("gracePeriodSeconds"))
            if res != "pods":
                self.store.remove(res, current)
                return Web.json_response(current)
            default = current["spec"].get("terminationGracePeriodSeconds", 30)
            return Web.json_response(
                self._delete_pod(copy.deepcopy(current), int(default if grace is None else grace))
            )
        raise ApiError(405, "MethodNotAllowed", request.method)

    def _create(self, res: str, ns: str, body: Obj) -> Obj:
        metadata = body.setdefault("metadata", {})
        name = metadata.get("name", "")
        if ns:
            metadata["namespace"] = ns
        if res == "pods":
            self._admit(ns, name, body)
        if self.store.get(res, ns, name) is not None:
            raise ApiError(409, "AlreadyExists", f'{res} "{name}" already exists')
        if res == "services":
            self.allocate(body)
        created = datetime.now(UTC) - timedelta(seconds=self.clock_behind_seconds)
        metadata.update(uid=str(uuid.uuid4()), creationTimestamp=created.strftime("%Y-%m-%dT%H:%M:%SZ"))
        body.setdefault("kind", _KINDS[res])
        body.setdefault("apiVersion", _API_VERSIONS.get(res, "v1"))
        if res == "pods":
            add_default_tolerations(body)
            body["spec"].setdefault("terminationGracePeriodSeconds", 30)
            body.setdefault("status", {}).setdefault("phase", "Pending")
        return self.store.put(res, body)

    def _admit(self, ns: str, name: str, pod: Obj) -> None:
        namespace = self.store.get("namespaces", "", ns)
        if namespace is None:
            raise ApiError(404, "NotFound", f'namespaces "{ns}" not found')
        if namespace["status"]["phase"] == "Terminating":
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: unable to create new content in namespace {ns} '
                "because it is being terminated",
            )
        priority_class = pod.get("spec", {}).get("priorityClassName")
        if priority_class and self.store.get("priorityclasses", "", priority_class) is None:
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: no PriorityClass with name {priority_class} was found',
            )
        self.admission.admit_pod(ns, name, pod)

    def _selector(self, res: str, ns: str, query: Any) -> Selector:
        try:
            return Selector.parse(res, ns, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        except SelectorError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from exc

    def _list(self, res: str, ns: str, query: Any) -> Obj:
        selector = self._selector(res, ns, query)
        if query.get("resourceVersionMatch") and not query.get("resourceVersion"):
            raise ApiError(
                400, "BadRequest", "resourceVersionMatch is forbidden unless resourceVersion is provided"
            )
        # resourceVersion=0 is served from the watch cache, which ignores ``limit`` and
        # answers with everything at once (kube-apiserver's cacher, computeListLimit).
        limit = 0 if query.get("resourceVersion") == "0" else int(query.get("limit") or 0)
        if query.get("continue"):
            token = json.loads(base64.b64decode(query["continue"]))
            snapshot = self._snapshots.get(token["snapshot"])
            if token["rv"] < self.store.compacted or snapshot is None:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result.",
                )
            version, at = token["rv"], token["at"]
        else:
            # A paginated list is one snapshot, at the first page's version: later pages show
            # the objects as they were then (etcd reads at that revision), not as they are now.
            version, at = self.store.version, 0
            snapshot = self.store.select(selector)
        items = snapshot[at : at + limit] if limit else snapshot[at:]
        metadata: Obj = {"resourceVersion": str(version)}
        key = token["snapshot"] if query.get("continue") else uuid.uuid4().hex
        if limit and at + limit < len(snapshot):
            self._snapshots[key] = snapshot
            while len(self._snapshots) > _SNAPSHOTS:
                self._snapshots.pop(next(iter(self._snapshots)))
            token = {"rv": version, "snapshot": key, "at": at + limit}
            metadata["continue"] = base64.b64encode(json.dumps(token).encode()).decode()
        else:
            self._snapshots.pop(key, None)
        return {"kind": f"{_KINDS[res]}List", "apiVersion": "v1", "metadata": metadata, "items": items}

    async def _watch(self, request: Web.Request, res: str, ns: str) -> Web.StreamResponse:
        selector = self._selector(res, ns, request.query)
        response = Web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        watcher = self.store.subscribe(selector)
        version = request.query.get("resourceVersion", "")
        seconds = min(float(request.query.get("timeoutSeconds") or self.watch_seconds), self.watch_seconds)
        bookmarks = request.query.get("allowWatchBookmarks") in ("true", "True", "1")

        async def send(kind: str, obj: Obj) -> None:
            await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

        self._streams[id(watcher)] = request
        async with self._request_seen:  # a watch is open: ``wait_until`` predicates may hold
            self._request_seen.notify_all()
        try:
            if version in ("", "0"):
                backlog = [Change(0, "ADDED", res, copy.deepcopy(o)) for o in self.store.select(selector)]
            else:
                backlog = list(self.store.since(int(version), selector))
            for change in backlog:
                await send(change.kind, change.obj)
            loop = asyncio.get_running_loop()
            final = loop.time() + seconds - min(_FINAL_BOOKMARK_SECONDS, seconds / 2)
            async with asyncio.timeout(seconds):
                while True:
                    wait = min(self.bookmark_seconds, max(0.0, final - loop.time())) if bookmarks else None
                    try:
                        async with asyncio.timeout(wait):
                            next_change = await watcher.queue.get()
                    except TimeoutError:
                        meta = {"resourceVersion": str(self.store.version)}
                        await send("BOOKMARK", {"kind": _KINDS[res], "apiVersion": "v1", "metadata": meta})
                        if loop.time() >= final:
                            final = float("inf")  # one before the deadline, then wait it out
                        continue
                    if next_change is None:
                        break
                    await send(next_change.kind, next_change.obj)
                    if next_change.kind == "ERROR":
                        break
        except Gone as exc:
            await send("ERROR", status_body(410, "Expired", str(exc)))
        except (TimeoutError, ConnectionResetError):
            pass
        finally:
            self._streams.pop(id(watcher), None)
            self.store.unsubscribe(watcher)
        return response

    def end_watches(self) -> None:
        """End every open watch now (an API server restart or a load balancer's idle cut)."""
        for watcher in self.store.watchers:
            watcher.queue.put_nowait(None)

    def cut_watches(self) -> None:
        """Reset the connection of every open watch mid-stream (a crash, a proxy dropping it)."""
        for request in self._streams.values():
            if request.transport is not None:
                request.transport.abort()
        self.end_watches()

    def watch_error(self, code: int, message: str) -> None:
        """Every open watch gets an ``ERROR`` event with this status, then ends."""
        reason = {429: "TooManyRequests", 410: "Expired"}.get(code, "InternalError")
        for watcher in self.store.watchers:
            watcher.queue.put_nowait(Change(0, "ERROR", "", status_body(code, reason, message)))

    def restart(self) -> None:
        """The API server restarts: every watch is cut and, until ``cache_ready`` is set again,
        watches are answered 429 while the watch cache rebuilds (etcd, and so the history
        that watches resume from, is kept)."""
        self.cache_ready = False
        self.cut_watches()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate`` holds, checked after every request and every watch opened."""
        async with self._request_seen:
            await self._request_seen.wait_for(predicate)

    async def close(self) -> None:
        self.end_watches()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@asynccontextmanager
async def kube_cluster() -> AsyncIterator[tuple[KubeDouble, client.ApiClient]]:
    """A double on a real port and a kubernetes-asyncio client talking HTTP to it."""
    double = KubeDouble()
    app = Web.Application()
    app.router.add_route("*", "/{tail:.*}", double.handle)
    runner = Web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = Web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    try:
        async with client.ApiClient(configuration) as api:
            yield double, api
    finally:
        await double.close()
        await runner.cleanup()


@asynccontextmanager
async def kube_api() -> AsyncIterator[client.ApiClient]:
    """Just the client (for tests that script the cluster through the API alone)."""
    async with kube_cluster() as (_, api):
        yield api


def write_kubeconfig(path: Path, server: str, user: dict[str, Any] | None = None) -> Path:
    """A kubeconfig at ``path`` for the double at ``server`` (a plain token unless ``user``)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "t", "cluster": {"server": server}}],
        "users": [{"name": "t", "user": user or {"token": "abc"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
        "current-context": "t",
    }
    path.write_text(json.dumps(config))
    return path


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
