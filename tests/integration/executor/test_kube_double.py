"""The API double answers as an API server does (checked with the real client), so that the
executor's tests on it mean something."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.integration.executor.kube_double import Fault, KubeDouble, kube_cluster, node, plain_pod
from tests.integration.executor.kube_store import Selector
from tests.integration.executor.kube_taints import NOT_READY_TAINT, UNREACHABLE_TAINT


@pytest.fixture
async def cluster() -> Any:
    async with kube_cluster() as (double, api):
        yield double, client.CoreV1Api(api), api.configuration.host


async def make_pods(core: client.CoreV1Api) -> None:
    for name, node_name, labels in [("a", "n1", {"app": "x"}), ("b", "n2", {"app": "y"}), ("c", "n1", {})]:
        await core.create_namespaced_pod("kube-system", plain_pod(name, node_name, "1", "1Gi", labels))


async def names(core: client.CoreV1Api, **selectors: Any) -> list[str]:
    return [p.metadata.name for p in (await core.list_pod_for_all_namespaces(**selectors)).items]


async def test_selectors_are_evaluated_server_side(cluster: Any) -> None:
    _, core, _ = cluster
    await make_pods(core)
    assert await names(core, label_selector="app in (x,y)") == ["a", "b"]
    assert await names(core, label_selector="!app") == ["c"]
    assert await names(core, label_selector="app!=x") == ["b", "c"]
    assert await names(core, field_selector="spec.nodeName=n1,status.phase!=Failed") == ["a", "c"]
    with pytest.raises(ApiException) as refused:
        await names(core, field_selector="spec.containers=x")
    assert refused.value.status == 400


async def test_pod_field_selectors_are_those_of_the_api_server(cluster: Any) -> None:
    double, core, _ = cluster
    await make_pods(core)  # a and c on n1, b on n2, in kube-system
    unbound = plain_pod("d", "", "1", "1Gi")
    del unbound["spec"]["nodeName"]
    await core.create_namespaced_pod("default", unbound)
    double.set_pod("c", "kube-system", phase="Succeeded")
    assert await names(core, field_selector="spec.nodeName!=") == ["a", "b", "c"]
    assert await names(core, field_selector="spec.nodeName=") == ["d"]
    assert await names(core, field_selector="spec.nodeName==n2") == ["b"]
    assert await names(core, field_selector="metadata.namespace=default") == ["d"]
    assert await names(core, field_selector="metadata.name!=a,metadata.namespace==kube-system") == ["b", "c"]
    unfinished = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    assert await names(core, field_selector=unfinished) == ["a", "b"]
    for bad in ("spec.nodeName", "spec.nodeName~=x", "status.podIPs=x"):
        with pytest.raises(ApiException) as refused:
            await names(core, field_selector=bad)
        assert refused.value.status == 400, bad


async def test_watches_see_objects_enter_and_leave_their_selection(cluster: Any) -> None:
    double, core, host = cluster
    unbound = plain_pod("d", "", "1", "1Gi")
    del unbound["spec"]["nodeName"]
    await core.create_namespaced_pod("kube-system", unbound)
    version = (await core.list_pod_for_all_namespaces()).metadata.resource_version
    selection = Selector.parse("pods", "", "", "spec.nodeName!=,status.phase!=Succeeded")
    live = double.store.subscribe(selection)
    double.bind("d", "n1", "kube-system")  # enters: ADDED, not MODIFIED
    double.set_pod("d", "kube-system", phase="Running")
    double.set_pod("d", "kube-system", phase="Succeeded")  # leaves: DELETED
    expected = [("ADDED", "d"), ("MODIFIED", "d"), ("DELETED", "d")]
    changes = [live.queue.get_nowait() for _ in expected]
    assert [(c.kind, c.obj["metadata"]["name"]) for c in changes if c is not None] == expected
    assert live.queue.empty()
    query = "fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded"
    replayed = await watch_lines(host, f"resourceVersion={version}&{query}", 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in replayed] == expected
    # The DELETED carries the object as it last matched (Running), with the new version.
    deleted = replayed[-1]["object"]
    assert deleted["status"]["phase"] == "Running"
    assert (
        deleted["metadata"]["resourceVersion"]
        == double.pod("d", "kube-system")["metadata"]["resourceVersion"]
    )


async def test_a_list_at_resource_version_0_ignores_limit_like_the_watch_cache(cluster: Any) -> None:
    _, core, _ = cluster
    await make_pods(core)
    for match in (None, "NotOlderThan"):
        cached = await core.list_pod_for_all_namespaces(
            limit=2, resource_version="0", resource_version_match=match
        )
        assert [p.metadata.name for p in cached.items] == ["a", "b", "c"] and not cached.metadata._continue
    with pytest.raises(ApiException) as refused:
        await core.list_pod_for_all_namespaces(resource_version_match="NotOlderThan")
    assert refused.value.status == 400


async def test_lists_page_with_limit_and_continue_and_old_tokens_expire(cluster: Any) -> None:
    double, core, _ = cluster
    await make_pods(core)
    first = await core.list_pod_for_all_namespaces(limit=2)
    assert [p.metadata.name for p in first.items] == ["a", "b"] and first.metadata._continue
    rest = await core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["c"] and not rest.metadata._continue
    double.store.compact()
    with pytest.raises(ApiException) as expired:
        await core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    assert expired.value.status == 410


async def test_later_pages_show_the_list_as_it_was_at_the_first(cluster: Any) -> None:
    double, core, _ = cluster
    await make_pods(core)
    first = await core.list_pod_for_all_namespaces(limit=1)
    double.set_pod("b", "kube-system", phase="Failed")
    await core.create_namespaced_pod("kube-system", plain_pod("bb", "n1", "1", "1Gi"))
    await core.delete_namespaced_pod("c", "kube-system", grace_period_seconds=0)
    rest = await core.list_pod_for_all_namespaces(limit=5, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["b", "c"]
    assert rest.items[0].status.phase == "Running"
    assert rest.metadata.resource_version == first.metadata.resource_version


async def watch_lines(host: str, query: str, count: int) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{host}/api/v1/pods?watch=true&{query}") as got,
    ):
        lines = []
        async for line in got.content:
            lines.append(json.loads(line))
            if len(lines) == count:
                break
        return lines


async def test_watches_replay_from_a_version_send_bookmarks_and_answer_410_when_too_old(cluster: Any) -> None:
    double, core, host = cluster
    await make_pods(core)
    listed = await core.list_pod_for_all_namespaces(label_selector="app=x")
    await core.patch_namespaced_pod_status("a", "kube-system", {"status": {"phase": "Failed"}})
    version = listed.metadata.resource_version
    events = await watch_lines(
        host, f"resourceVersion={version}&labelSelector=app%3Dx&allowWatchBookmarks=true&timeoutSeconds=1", 2
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events[:1]] == [("MODIFIED", "a")]
    assert events[1]["type"] == "BOOKMARK"
    double.store.compact()
    (error,) = await watch_lines(host, f"resourceVersion={version}", 1)
    assert (error["type"], error["object"]["code"]) == ("ERROR", 410)


async def changes_since(core: client.CoreV1Api, version: str, count: int) -> int:
    """How many changes a watch from ``version`` replays (the real client's watch; 410 raises)."""
    pods = core.list_pod_for_all_namespaces
    stream = watch.Watch().stream(pods, resource_version=version, timeout_seconds=5)
    seen = 0
    async with stream:
        async for _ in stream:
            seen += 1
            if seen == count:
                break
    return seen


async def test_the_watch_cache_keeps_75_seconds_of_history_not_a_count_of_changes(cluster: Any) -> None:
    double, core, _ = cluster
    await core.create_namespaced_pod("kube-system", plain_pod("a", "n1", "1", "1Gi"))
    start = (await core.list_pod_for_all_namespaces()).metadata.resource_version
    for n in range(300):  # a burst in a second: the ring grows to keep it all
        double.set_pod("a", "kube-system", message=f"burst {n}")
    assert await changes_since(core, start, 300) == 300
    double.clock.advance(80)  # the burst is now older than the 75 s the cache must keep
    recent = (await core.list_pod_for_all_namespaces()).metadata.resource_version
    for n in range(150):  # the ring, full of stale changes, shrinks and drops them
        double.set_pod("a", "kube-system", message=f"later {n}")
    with pytest.raises(ApiException) as expired:
        await changes_since(core, start, 1)
    assert expired.value.status == 410 and "too old resource version" in expired.value.reason
    assert await changes_since(core, recent, 150) == 150


async def test_noexecute_taints_evict_each_pod_when_its_toleration_runs_out(cluster: Any) -> None:
    double, core, _ = cluster
    await core.create_node(node("n1"))
    forever = {"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute"}
    tolerating = {"default": [], "brief": [forever | {"tolerationSeconds": 60}], "on": [forever]}
    for name, tolerations in tolerating.items():
        pod = plain_pod(name, "n1", "1", "1Gi")
        pod["spec"]["tolerations"] = tolerations
        await core.create_namespaced_pod("kube-system", pod)
    added = {
        (t.key, t.toleration_seconds)
        for t in (await core.read_namespaced_pod("default", "kube-system")).spec.tolerations
    }
    assert added == {(NOT_READY_TAINT, 300), (UNREACHABLE_TAINT, 300)}, "DefaultTolerationSeconds"
    double.lose_node("n1")
    taints = {(t.key, t.effect) for t in (await core.read_node("n1")).spec.taints}
    assert taints == {(UNREACHABLE_TAINT, "NoSchedule"), (UNREACHABLE_TAINT, "NoExecute")}

    async def evicted() -> list[str]:
        pods = (await core.list_namespaced_pod("kube-system")).items
        return sorted(p.metadata.name for p in pods if p.metadata.deletion_timestamp)

    both = ["brief", "default"]
    for seconds, expected in [(59, []), (1, ["brief"]), (240, both), (10**6, both)]:
        double.pass_time(seconds)
        assert await evicted() == expected


async def test_watches_end_after_their_timeout(cluster: Any) -> None:
    _, _, host = cluster
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{host}/api/v1/pods?watch=true&timeoutSeconds=0") as got,
    ):
        assert await got.read() == b""


async def test_graceful_deletion_gives_a_terminal_phase_then_removes_and_finalizers_hold(
    cluster: Any,
) -> None:
    double, core, _ = cluster
    await make_pods(core)
    double.unreachable.add("n2")
    changes = double.store.subscribe(Selector("pods", "kube-system"))
    await core.delete_namespaced_pod("b", "kube-system")  # on an unreachable node: stays
    await core.delete_namespaced_pod("a", "kube-system")
    assert (await core.read_namespaced_pod("a", "kube-system")).metadata.deletion_timestamp is not None
    seen = []
    while ("DELETED", "a") not in seen:
        change = await changes.queue.get()
        assert change is not None
        seen.append((change.kind, change.obj["metadata"]["name"]))
        if change.obj["metadata"]["name"] == "a" and change.kind == "MODIFIED":
            assert change.obj["status"]["phase"] in ("Running", "Failed")
    assert [s for s in seen if s[1] == "a"] == [("MODIFIED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert double.pod("b", "kube-system")["status"]["phase"] == "Running"
    await core.patch_namespaced_pod("c", "kube-system", {"metadata": {"finalizers": ["x/y"]}})
    await core.delete_namespaced_pod("c", "kube-system", grace_period_seconds=0)
    assert double.pod("c", "kube-system")["metadata"]["deletionTimestamp"]
    await core.patch_namespaced_pod("c", "kube-system", {"metadata": {"finalizers": None}})
    assert double.store.get("pods", "kube-system", "c") is None


async def test_admission_and_injected_faults(cluster: Any) -> None:
    double, core, host = cluster
    pod = plain_pod("p", "n1", "1", "1Gi")
    with pytest.raises(ApiException) as missing:
        await core.create_namespaced_pod("nowhere", pod)
    assert missing.value.status == 404
    double.admission.add_quota("kube-system", {"pods": "0"})
    with pytest.raises(ApiException) as quota:
        await core.create_namespaced_pod("kube-system", pod)
    assert quota.value.status == 403 and "exceeded quota" in json.loads(quota.value.body)["message"]
    double.faults.append(Fault("GET /api/v1/nodes", status=429, retry_after=3))
    async with aiohttp.ClientSession() as session, session.get(f"{host}/api/v1/nodes") as got:
        assert (got.status, got.headers["Retry-After"]) == (429, "3")


def test_the_double_starts_with_the_usual_namespaces() -> None:
    double = KubeDouble()
    assert {key[2] for key in double.store.objects if key[0] == "namespaces"} == {"default", "kube-system"}


async def test_binding_respects_the_nodes_pods_capacity(cluster: Any) -> None:
    double, core, _ = cluster
    full = node("small")
    full["status"]["allocatable"]["pods"] = "1"
    await core.create_node(full)
    await core.create_namespaced_pod("kube-system", plain_pod("daemon", "small", "1", "1Gi"))
    pod = plain_pod("job", "", "1", "1Gi")
    del pod["spec"]["nodeName"]
    await core.create_namespaced_pod("kube-system", pod)
    refused = double.bind("job", "small", "kube-system")
    assert "nodeName" not in refused["spec"]
    assert refused["status"]["conditions"][0]["message"].endswith("Too many pods.")
