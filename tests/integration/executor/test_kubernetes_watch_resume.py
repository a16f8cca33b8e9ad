"""Watches on a bad day (issue 45, item 2): an API server that restarts, throttles or breaks
a stream mid-way must not make the executor relist. Only a 410 relists; anything else
resumes the watch from its last resource version, as client-go's reflector does, so that a
restart under many executors and pods is not a storm of full lists."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest

from armada.executor.backends.kube_calls import KubeError, after_watch_failure
from armada.executor.backends.kubernetes import KubernetesBackend
from armada.executor.backoff import Backoff
from armada.executor.settings import KubernetesSettings
from tests.integration.executor.kube_backend import HANG, POD, Cluster, final, usage_becomes
from tests.integration.executor.kube_double import Fault, KubeDouble, kube_cluster, node, plain_pod

INFORMERS = ("nodes", "other pods", "armada pods")
_WATCH = re.compile(r"[?&]watch=(?:true|True|1)(?:&|$)")


def informer_of(line: str) -> str:
    """Which of the executor's three list-and-watch loops made a request."""
    if " /api/v1/nodes" in line:
        return "nodes"
    return "other pods" if re.search(r"labelSelector=(?:%21|!)", line) else "armada pods"


def lists(double: KubeDouble) -> Counter[str]:
    """List (not watch) requests, by informer."""
    return Counter(informer_of(r) for r in double.requests if r.startswith("GET ") and not _WATCH.search(r))


async def all_watching(double: KubeDouble) -> None:
    """Wait until each of the three loops has a watch open (to be cut)."""
    async with asyncio.timeout(HANG):
        await double.wait_until(lambda: len(double.store.watchers) >= len(INFORMERS))


async def follows_the_cluster(cluster: Cluster) -> None:
    """Every loop still sees changes: the node and other-pods informers and the pod watch."""
    await cluster.core.create_namespaced_pod("kube-system", plain_pod("daemon", "node-1", "1", "1Gi"))
    await usage_becomes(cluster, "node-1", {"cpu": "1", "memory": "1Gi", "pods": "1"})
    cluster.double.exit(POD, 0)
    assert (await final(cluster)).kind == "succeeded"


async def started(cluster: Cluster) -> None:
    await cluster.core.create_node(node("node-1"))
    await cluster.launch()
    cluster.double.run(POD)
    await cluster.recorder.wait_for(lambda: "running" in cluster.recorder.kinds("r1"), within=HANG)
    await all_watching(cluster.double)


async def test_an_api_server_restart_relists_each_informer_at_most_once(cluster: Cluster) -> None:
    double = cluster.double
    double.restart_retry_after = 0
    await started(cluster)
    before = lists(double)
    double.restart()
    # Each loop is refused (429) more than once while the watch cache rebuilds.
    refused = lambda: Counter(map(informer_of, double.refused_watches))  # noqa: E731
    async with asyncio.timeout(HANG):
        await double.wait_until(lambda: all(refused()[name] >= 2 for name in INFORMERS))
    double.cache_ready = True
    await follows_the_cluster(cluster)
    relists = lists(double) - before
    assert all(relists[name] <= 1 for name in INFORMERS), relists


@pytest.mark.parametrize("how", ["reset", "error 500", "error 429"])
async def test_a_watch_broken_mid_stream_resumes_from_its_last_version(cluster: Cluster, how: str) -> None:
    double = cluster.double
    await started(cluster)
    before, seen = lists(double), len(double.requests)
    if how == "reset":
        double.cut_watches()
    else:
        double.watch_error(int(how.split()[1]), "injected")
    await follows_the_cluster(cluster)
    assert lists(double) == before, "resumed, not relisted"
    resumed = [r for r in double.requests[seen:] if _WATCH.search(r)]
    assert resumed and all(re.search(r"resourceVersion=[1-9]", r) for r in resumed)


async def test_a_410_relists_each_informer_once(cluster: Cluster) -> None:
    double = cluster.double
    await started(cluster)
    before = lists(double)
    double.store.compact()
    double.end_watches()
    await follows_the_cluster(cluster)
    assert lists(double) - before == Counter(dict.fromkeys(INFORMERS, 1))


def test_only_a_410_forgets_the_version_and_a_failing_relist_backs_off() -> None:
    backoff = Backoff(0.1, 1.0)
    assert after_watch_failure(KubeError(410, "Expired", "too old"), "42", backoff) == ("", 0.0)
    version, delay = after_watch_failure(KubeError(410, "Expired", "continue too old"), "", backoff)
    assert version == "" and delay > 0, "a relist that failed with 410 waits before the next"
    throttled = KubeError(429, "TooManyRequests", "storage is (re)initializing", retry_after=3)
    assert after_watch_failure(throttled, "42", backoff) == ("42", 3)
    for error in (KubeError(503, "ServiceUnavailable", ""), KubeError(0, "NoAnswer", ""), OSError()):
        version, delay = after_watch_failure(error, "42", backoff)
        assert version == "42" and delay > 0


async def test_discovery_is_retried_while_the_api_server_is_unavailable() -> None:
    async with kube_cluster() as (double, api):
        # More failures than one call's attempts: the whole discovery is retried.
        double.faults.append(Fault(r"GET /api/v1/pods\?(?!.*watch)", status=503, times=5))
        settings = KubernetesSettings(api_attempts=2, retry_initial_seconds=0.01, retry_max_seconds=0.02)
        backend = KubernetesBackend(settings, 0.0, api=api, executor_id="exec-a")
        try:
            async with asyncio.timeout(HANG):
                assert await backend.discover() == []
        finally:
            await backend.close()
