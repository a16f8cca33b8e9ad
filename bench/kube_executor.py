"""Benchmark the kubernetes backend on a simulated big cluster: CPU and event-loop stalls.

A child process serves the Kubernetes API double (tests/integration/executor) holding
``--nodes`` nodes, ``--pods`` Armada pods of this executor and two non-Armada pods per
node, and keeps changing ``--churn`` Armada pods per second (status updates, as kubelets
write them) and a few non-Armada pods. This process runs the real backend against it, as
the executor does, with an observer that holds every run: the start-up (discover, first
list, informers synced), then ``--seconds`` of steady state, which includes the periodic
relist (``--resync``). Heartbeats are simulated: the node report is read every 1.5 s,
as each lease call does.

With ``--restart-after S`` the API server restarts S seconds into the steady state: every
watch is cut, watches are answered 429 ``storage is (re)initializing`` (``Retry-After: 1``)
for ``--rebuild`` seconds while its watch cache rebuilds, then served again; the summary
adds ``restart_relists`` (list calls per watch loop after the restart: nodes, other pods,
Armada pods; a resuming executor makes none) and ``restart_refused_watches``.

Prints a human summary, then one JSON line: ``startup_seconds``, ``startup_max_stall_ms``,
``steady_cpu_seconds_per_minute`` (this process's CPU, the executor's, per minute of
steady state), ``steady_max_stall_ms`` (the longest the event loop was late by),
``heartbeat_max_late_ms`` and ``rss_mb``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web
from kubernetes_asyncio import client

from armada.executor.backend import RunStatus
from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.settings import KubernetesSettings
from armada.runtime import tune_for_service
from bench.common import report, rss_mb
from tests.integration.executor.kube_double import KubeDouble

EXECUTOR = "bench"


def _pod(name: str, node: str, labels: dict[str, str], phase: str = "Running") -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        },
        "status": {"phase": phase},
    }


def _populate(double: KubeDouble, nodes: int, pods: int) -> None:
    for n in range(nodes):
        name = f"node-{n}"
        double.store.put(
            "nodes",
            {
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
        )
        for d in range(2):
            double.store.put("pods", _pod(f"daemon-{n}-{d}", name, {"app": "daemon"}))
    for p in range(pods):
        labels = {
            "armada_job_run_id": f"run-{p}",
            "armada_job_id": f"job-{p}",
            "armada_executor_id": EXECUTOR,
        }
        double.store.put("pods", _pod(f"armada-job-{p}-0", f"node-{p % nodes}", labels))


async def _churn(double: KubeDouble, pods: int, per_second: int, nodes: int) -> None:
    rng = random.Random(1)
    tick = 0
    while True:
        await asyncio.sleep(1.0)
        tick += 1
        for _ in range(per_second):
            name = f"armada-job-{rng.randrange(pods)}-0"
            pod = double.store.get("pods", "default", name)
            if pod is not None:
                pod = {
                    **pod,
                    "status": {"phase": "Running", "podIP": f"10.0.{tick % 250}.{rng.randrange(250)}"},
                }
                double.store.put("pods", pod)
        name = f"extra-{tick}"
        double.store.put("pods", _pod(name, f"node-{rng.randrange(nodes)}", {"app": "extra"}))
        old = double.store.get("pods", "default", f"extra-{tick - 5}")
        if old is not None:
            double.store.remove("pods", old)


def _lists(double: KubeDouble) -> Counter[str]:
    """List (not watch) calls by watch loop: nodes, other pods, Armada pods."""
    counts: Counter[str] = Counter()
    for line in double.requests:
        if not line.startswith("GET ") or re.search(r"[?&]watch=(?:true|True|1)", line):
            continue
        if " /api/v1/nodes" in line:
            counts["nodes"] += 1
        else:
            counts["other pods" if re.search(r"labelSelector=(?:%21|!)", line) else "armada pods"] += 1
    return counts


async def _restart(double: KubeDouble, when: Any, rebuild: float, out: Any) -> None:
    """Restart the API server once ``when`` is set; report the relists 30 s after it is back."""
    await asyncio.get_running_loop().run_in_executor(None, when.wait)
    before = _lists(double)
    double.restart()
    await asyncio.sleep(rebuild)
    double.cache_ready = True
    await asyncio.sleep(30.0)
    out.send({"relists": dict(_lists(double) - before), "refused_watches": len(double.refused_watches)})


def serve(port_out: Any, nodes: int, pods: int, churn: int, restart: tuple[Any, float] | None) -> None:
    """The child process: the API double with the simulated cluster."""

    async def main() -> None:
        double = KubeDouble()
        double.bookmark_seconds = 60.0
        double.watch_seconds = 300.0
        _populate(double, nodes, pods)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", double.handle)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_out.send(runner.addresses[0][1])
        restarting = [asyncio.create_task(_restart(double, *restart, port_out))] if restart else []
        await _churn(double, pods, churn, nodes)
        await asyncio.gather(*restarting)

    asyncio.run(main())


class HoldAll:
    """An observer that holds every run (as the executor's tracker would) and counts."""

    def __init__(self) -> None:
        self.observed = 0
        self.vanished = 0

    async def observe(self, status: RunStatus) -> None:
        self.observed += 1

    async def gone(self, run_id: str) -> None:
        self.vanished += 1

    def holds(self, run_id: str) -> bool:
        return True


class GcPauses:
    """The longest garbage collection (a full collection walks every live object)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.worst = max(self.worst, time.perf_counter() - self._started)


class Stalls:
    """How late the event loop wakes a 10 ms sleeper: the longest stall.

    ``worst`` is wall time, which on a shared machine includes time the OS gave to other
    processes; ``worst_cpu`` is the CPU this thread spent in the same interval, i.e. how
    long the event loop itself was busy without yielding (at most).
    """

    def __init__(self) -> None:
        self.worst = 0.0
        self.worst_cpu = 0.0

    def reset(self) -> tuple[float, float]:
        was = (self.worst, self.worst_cpu)
        self.worst = self.worst_cpu = 0.0
        return was

    async def run(self) -> None:
        while True:
            started, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.01)
            self.worst = max(self.worst, time.perf_counter() - started - 0.01)
            self.worst_cpu = max(self.worst_cpu, time.thread_time() - cpu)


async def heartbeats(backend: KubernetesBackend, worst: list[float]) -> None:
    """A lease call's node report every 1.5 s; records how late each one completes."""
    due = time.perf_counter()
    while True:
        due += 1.5
        await backend.nodes()
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        worst[0] = max(worst[0], time.perf_counter() - due)


async def measure(port: int, args: argparse.Namespace) -> dict[str, Any]:
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    settings = KubernetesSettings(resync_seconds=args.resync, housekeeping_seconds=10.0)
    async with client.ApiClient(configuration) as api:
        stalls, pauses = Stalls(), GcPauses()
        stall_task = asyncio.create_task(stalls.run())
        backend = KubernetesBackend(settings, 300.0, api=api, executor_id=EXECUTOR)
        observer = HoldAll()
        if args.freeze:
            tune_for_service()  # as `armada executor` does before it starts: freeze, GC thresholds
        started = time.perf_counter()
        found = await backend.discover()
        await backend.start(observer)
        nodes = await backend.nodes()
        startup = time.perf_counter() - started
        if args.freeze:
            gc.freeze()  # as the executor does once its caches are loaded (its first lease call)
        startup_stall, startup_stall_cpu = stalls.reset()
        late = [0.0]
        beat = asyncio.create_task(heartbeats(backend, late))
        await asyncio.sleep(args.warmup)
        if args.restart_after:
            asyncio.get_running_loop().call_later(args.restart_after, args.restart_event.set)
        stalls.reset()
        late[0], startup_gc, pauses.worst = 0.0, pauses.worst, 0.0
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(args.seconds)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        for task in (beat, stall_task):
            task.cancel()
        await backend.close()
    return {
        "bench": "kube_executor",
        "nodes": len(nodes),
        "pods_found": len(found),
        "churn_per_second": args.churn,
        "resync_seconds": args.resync,
        "startup_seconds": round(startup, 2),
        "startup_max_stall_ms": round(startup_stall * 1000, 1),
        "startup_max_stall_cpu_ms": round(startup_stall_cpu * 1000, 1),
        "startup_max_gc_ms": round(startup_gc * 1000, 1),
        "steady_seconds": round(wall, 1),
        "steady_max_gc_ms": round(pauses.worst * 1000, 1),
        "steady_cpu_seconds_per_minute": round(cpu * 60 / wall, 2),
        "steady_max_stall_ms": round(stalls.worst * 1000, 1),
        "steady_max_stall_cpu_ms": round(stalls.worst_cpu * 1000, 1),
        "heartbeat_max_late_ms": round(late[0] * 1000, 1),
        "observed": observer.observed,
        "gone": observer.vanished,
        "rss_mb": rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--churn", type=int, default=100, help="Armada pod status changes per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="steady-state window")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--resync", type=float, default=600.0, help="the backend's resync_seconds")
    parser.add_argument("--restart-after", type=float, default=0.0, help="restart the API server then")
    parser.add_argument("--rebuild", type=float, default=10.0, help="seconds its watch cache rebuilds")
    parser.add_argument(
        "--no-freeze",
        dest="freeze",
        action="store_false",
        help="skip the executor's GC tuning (gc.freeze() and thresholds)",
    )
    args = parser.parse_args()
    receive, send = multiprocessing.Pipe(duplex=False)
    spawn = multiprocessing.get_context("spawn")
    args.restart_event = spawn.Event()
    restart = (args.restart_event, args.rebuild) if args.restart_after else None
    server = spawn.Process(target=serve, args=(send, args.nodes, args.pods, args.churn, restart), daemon=True)
    server.start()
    try:
        port = receive.recv()
        result = asyncio.run(measure(port, args))
        if restart is not None:
            restarted = receive.recv() if receive.poll(60.0) else {}
            result["restart_relists"] = restarted.get("relists")
            result["restart_refused_watches"] = restarted.get("refused_watches")
    finally:
        server.terminate()
        server.join()
    print(
        f"{result['pods_found']} pods, {result['nodes']} nodes: start-up {result['startup_seconds']} s "
        f"(longest stall {result['startup_max_stall_ms']} ms); steady state "
        f"{result['steady_cpu_seconds_per_minute']} CPU s/min, "
        f"longest stall {result['steady_max_stall_ms']} ms ({result['steady_max_stall_cpu_ms']} ms CPU), "
        f"heartbeat at most {result['heartbeat_max_late_ms']} ms late"
        + (f"; after a restart, relists {result['restart_relists']}" if args.restart_after else "")
    )
    report(result)


if __name__ == "__main__":
    main()
