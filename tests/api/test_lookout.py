"""Lookout's JSON API over real HTTP on SQLite and PostgreSQL: pages, groups, detail, overview."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from armada.client import ArmadaClient
from armada.lookout.wire import MAX_ANNOTATION_FILTERS, MAX_FILTER_TEXT
from armada.model import events as ev
from armada.model.ids import new_run_id
from tests.api.jobs import item, pod_spec, start
from tests.servers import ApiServer


def jobs(server: ApiServer, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/api/v1/jobs", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def ids(page: dict[str, Any]) -> list[str]:
    return [job["jobId"] for job in page["jobs"]]


def test_filters_sort_and_pages(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    first = client.submit_jobs(queue, "a", [item(priority=p) for p in (3, 1, 2)])
    second = client.submit_jobs(
        queue, "b", [item(annotations={"team": "ml"}), item(annotations={"team": "x"})]
    )
    start(server, queue, "a", first[0])
    # Job ids are ULIDs: submission order, in random order within one millisecond.
    oldest_first = sorted(first + second)

    assert ids(jobs(server, filter={"queue": queue})) == oldest_first[::-1]
    page = jobs(
        server, filter={"queue": queue}, order={"field": "submitted", "direction": "asc"}, skip=1, take=2
    )
    assert (ids(page), page["hasMore"]) == (oldest_first[1:3], True)
    assert jobs(server, filter={"queue": queue}, skip=3, take=2)["hasMore"] is False
    count = httpx.post(f"{server.url}/api/v1/jobCount", json={"filter": {"queue": queue}}).json()
    assert count == {"count": 5, "capped": False}
    by_priority = jobs(
        server, filter={"queue": queue, "jobSet": "a"}, order={"field": "priority", "direction": "asc"}
    )
    assert ids(by_priority) == [first[1], first[2], first[0]]
    assert ids(jobs(server, filter={"queue": queue, "states": ["RUNNING"]})) == [first[0]]
    assert set(ids(jobs(server, filter={"queue": queue, "states": ["RUNNING", "QUEUED"]}))) == set(
        first + second
    )
    assert ids(jobs(server, filter={"queue": queue, "annotations": {"team": "ml"}})) == [second[0]]
    assert ids(jobs(server, filter={"queue": queue, "jobId": second[1].upper()})) == [second[1]]
    assert ids(jobs(server, filter={"queue": queue, "owner": "nobody"})) == []
    later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    assert ids(jobs(server, filter={"queue": queue, "submittedFrom": later})) == []
    assert len(ids(jobs(server, filter={"queue": queue, "submittedTo": later}))) == 5

    [running] = jobs(server, filter={"queue": queue, "states": ["RUNNING"]})["jobs"]
    assert (running["cluster"], running["node"], running["cpuMillis"], running["memoryBytes"]) == (
        "cluster-1",
        "node-1",
        1000,
        64 * 2**20,
    )
    assert running["runStarted"] is not None and running["runFinished"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"take": 0}, "take"),
        ({"filter": {"states": ["SLEEPING"]}}, "filter.states[0]"),
        ({"skip": -1}, "skip"),
    ],
)
def test_bad_queries_are_400_naming_the_field(server: ApiServer, body: dict[str, Any], field: str) -> None:
    response = httpx.post(f"{server.url}/api/v1/jobs", json=body)
    assert response.status_code == 400
    assert response.json()["field"] == field


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/jobCount", "/api/v1/jobGroups"])
def test_filters_are_bounded_400_not_a_database_error(server: ApiServer, path: str) -> None:
    """Thousands of annotation keys made a query the database refused (SQLite: expression tree
    too large), answered as an outage (503); too many keys or too long a text is a 400."""
    many = {f"example.com/k{i}": "v" for i in range(MAX_ANNOTATION_FILTERS + 1)}
    for job_filter, field in [
        ({"annotations": {f"k{i}": "v" for i in range(2000)}}, "filter.annotations"),
        ({"annotations": many}, "filter.annotations"),
        ({"annotations": {"k": "v" * (MAX_FILTER_TEXT + 1)}}, "filter.annotations.k"),
        ({"queue": "q" * (MAX_FILTER_TEXT + 1)}, "filter.queue"),
    ]:
        response = httpx.post(f"{server.url}{path}", json={"filter": job_filter}, timeout=60)
        assert response.status_code == 400, response.text
        assert response.json()["field"] == field
    many.popitem()
    assert httpx.post(f"{server.url}{path}", json={"filter": {"annotations": many}}).status_code == 200


def test_groups_count_by_state(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    old = client.submit_jobs(queue, "old", [item(), item()])
    client.submit_jobs(queue, "new", [item()])
    client.cancel_jobs(queue, "old", old[:1])
    response = httpx.post(
        f"{server.url}/api/v1/jobGroups", json={"filter": {"queue": queue}, "groupBy": "jobSet"}
    )
    groups = response.json()["groups"]
    assert [(g["name"], g["queue"], g["count"], g["states"]) for g in groups] == [
        ("new", queue, 1, {"QUEUED": 1}),
        ("old", queue, 2, {"QUEUED": 1, "CANCELLED": 1}),
    ]
    by_state = httpx.post(
        f"{server.url}/api/v1/jobGroups", json={"filter": {"queue": queue}, "groupBy": "state"}
    ).json()["groups"]
    assert [(g["name"], g["count"]) for g in by_state] == [("QUEUED", 2), ("CANCELLED", 1)]


def test_detail_has_spec_runs_events_and_log_tail(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item(pod_spec=pod_spec(cpu="250m"))])
    run_id = start(server, queue, "set", job_id, node="node-9")
    envelope = {"queue": queue, "job_set_id": "set", "job_id": job_id, "run_id": run_id}
    server.append([ev.JobFailed(**envelope, reason="exit code 2", exit_code=2, log_tail="boom\n")])

    detail = httpx.get(f"{server.url}/api/v1/jobs/{job_id}").json()
    assert detail["job"]["state"] == "FAILED"
    assert "cpu: 250m" in detail["specYaml"]
    assert [(r["runId"], r["node"], r["state"]) for r in detail["runs"]] == [(run_id, "node-9", "FAILED")]
    assert [e["type"] for e in detail["events"]] == [
        "submitted",
        "queued",
        "leased",
        "pending",
        "running",
        "failed",
    ]
    assert detail["events"][-1]["fields"]["exitCode"] == 2
    assert (detail["job"]["reason"], detail["logTail"]) == ("exit code 2", "boom\n")

    missing = httpx.get(f"{server.url}/api/v1/jobs/01nosuchjob")
    assert (missing.status_code, missing.json()["field"]) == (404, "jobId")


def test_overview_counts_queues_and_capacity(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    job_ids = client.submit_jobs(queue, "set", [item(), item()])
    executor = f"exec-{queue}"
    node = ev.ExecutorNode(name="node-1", allocatable={"cpu": 8000, "memory": 32 * 2**30})
    server.append([ev.ExecutorReported(executor_id=executor, pool="gpu", nodes=[node])])
    envelope = {"queue": queue, "job_set_id": "set", "job_id": job_ids[0], "run_id": new_run_id()}
    server.append([ev.JobLeased(**envelope, cluster_id=executor, node_id="node-1", pool="gpu")])

    overview = httpx.get(f"{server.url}/api/v1/overview").json()
    [mine] = [q for q in overview["queues"] if q["name"] == queue]
    assert (mine["counts"], mine["cordoned"], mine["shares"]) == ({"QUEUED": 1, "LEASED": 1}, False, {})
    [reported] = [e for e in overview["executors"] if e["executorId"] == executor]
    assert (reported["nodes"], reported["readyNodes"], reported["stale"]) == (1, 1, False)
    assert reported["capacity"] == {"cpuMillis": 8000, "memoryBytes": 32 * 2**30, "gpu": 0}
    assert reported["used"] == {"cpuMillis": 1000, "memoryBytes": 64 * 2**20, "gpu": 0}
    assert any(pool["name"] == "gpu" for pool in overview["pools"])
    assert (reported["cordoned"], reported["cordonReason"]) == (False, "")

    client.cordon_executor(executor, "kernel upgrade")
    overview = httpx.get(f"{server.url}/api/v1/overview").json()
    [reported] = [e for e in overview["executors"] if e["executorId"] == executor]
    assert (reported["cordoned"], reported["cordonReason"]) == (True, "kernel upgrade")


def test_changes_stream_reports_the_head_as_it_moves(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    with httpx.Client(timeout=30) as http, http.stream("GET", f"{server.url}/api/v1/changes") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        heads = []
        for line in lines:
            if line.startswith("data:"):
                heads.append(int(line.removeprefix("data:")))
                if len(heads) == 1:
                    client.submit_jobs(queue, "set", [item()])
                else:
                    break
    assert heads[1] > heads[0]


@pytest.mark.parametrize("path", ["/", "/jobs", "/jobsets"])
def test_every_page_is_the_app_shell(server: ApiServer, path: str) -> None:
    response = httpx.get(f"{server.url}{path}?queue=x&state=RUNNING")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/js/app.js">' in response.text
    script = httpx.get(f"{server.url}/static/js/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
