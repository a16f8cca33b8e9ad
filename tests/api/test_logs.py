"""``POST /v1/binoculars/log`` against a real server, with the test standing in for the
executor over HTTP: the request rides the lease long-poll (waking it), the answer posted
to ``/v1/executor/logs`` is what the user gets; silence is a bounded 503.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from armada.scheduler.settings import SchedulerServiceSettings
from armada.settings import Settings
from tests.api.jobs import item
from tests.api.log_reads import Executor, Running, answer, lease_call, run_a_job
from tests.databases import database_url_for
from tests.servers import ApiServer, serving

#: Short enough for a test to see the timeout; the lease long-poll outlasts it, so only a
#: long-poll woken by the request can deliver it in time.
LOG_WAIT = 3.0


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings(scheduler=SchedulerServiceSettings(log_wait_seconds=LOG_WAIT))


@pytest.fixture
def running(server: ApiServer) -> Running:
    """A job running on executor ``cluster-1``, which has just called in."""
    return run_a_job(server, server)


def read_log(server: ApiServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/binoculars/log", json=body, timeout=30)


def test_a_log_request_wakes_the_long_poll_and_gets_the_executors_answer(
    server: ApiServer, running: Running
) -> None:
    lines = [{"timestamp": "2026-11-24T03:00:00.000000001Z", "line": "hello"}, {"line": "world"}]
    executor = Executor(server, running.run_id, {"lines": lines})
    executor.start()
    executor.polling.wait()
    body = {
        "jobId": running.job_id,
        "sinceTime": "2026-11-24T02:00:00Z",
        "logOptions": {"container": "main", "tailLines": 5, "sinceSeconds": 60, "limitBytes": 100},
    }
    response = read_log(server, body)
    executor.join(30)
    assert response.status_code == 200, response.text
    assert response.json() == {"log": [lines[0], {"line": "world"}]}
    [order] = executor.orders
    assert order["runId"] == running.run_id and order["jobId"] == running.job_id
    assert (order["container"], order["tailLines"], order["sinceSeconds"], order["limitBytes"]) == (
        "main",
        5,
        60,
        100,
    )
    assert order["sinceTime"].startswith("2026-11-24T02:00:00")


def test_a_log_the_cluster_no_longer_keeps_is_404(server: ApiServer, running: Running) -> None:
    executor = Executor(server, running.run_id, {"error": "pod gone", "missing": True})
    executor.start()
    executor.polling.wait()
    response = read_log(server, {"jobId": running.job_id, "runId": running.run_id})
    executor.join(30)
    assert response.status_code == 404
    assert "no longer kept: pod gone" in response.json()["detail"]


def test_an_executor_that_does_not_answer_is_a_503_within_the_bound(
    server: ApiServer, running: Running
) -> None:
    response = read_log(server, {"jobId": running.job_id})
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "executor cluster-1 did not answer within 3 s" in response.json()["detail"]
    # The request was withdrawn: a late answer finds nobody waiting, and the next lease
    # call carries no stale request.
    assert lease_call(server, {running.run_id: "running"}, wait_millis=0).get("logRequests") is None


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"jobId": "01hzzzzzzzzzzzzzzzzzzzzzzz"}, 404, "jobId"),
        ({"jobId": "{job}", "podNumber": 1}, 404, "podNumber"),
        ({"jobId": "{job}", "podNamespace": "elsewhere"}, 404, "podNamespace"),
        ({"jobId": "{job}", "sinceTime": "yesterday"}, 400, "sinceTime"),
        ({"jobId": "{job}", "sinceTime": "2026-11-24T03:00:00"}, 400, "sinceTime"),
        ({"jobId": "{job}", "logOptions": {"tailLines": -1}}, 400, "logOptions.tailLines"),
        ({"jobId": "{job}", "logOptions": {"limitBytes": 1e99}}, 400, "logOptions.limitBytes"),
        ({"jobId": "{job}", "logOptions": {"colour": True}}, 400, "logOptions.colour"),
        ({}, 400, "jobId"),
    ],
)
def test_bad_requests_name_the_field(
    server: ApiServer, running: Running, body: dict[str, Any], status: int, field: str
) -> None:
    if body.get("jobId") == "{job}":
        body = {**body, "jobId": running.job_id}
    response = read_log(server, body)
    assert (response.status_code, response.json().get("field")) == (status, field), response.text


def test_a_job_that_never_ran_has_no_log(server: ApiServer) -> None:
    queue = f"q-{uuid.uuid4().hex[:12]}"
    with ArmadaClient(server.url) as client:
        client.create_queue(Queue(name=queue))
        [job_id] = client.submit_jobs(queue, "set", [item()])
    response = read_log(server, {"jobId": job_id})
    assert response.status_code == 404
    assert "has not run yet" in response.json()["detail"]


def test_a_silent_executor_is_a_503_at_once(server: ApiServer, running: Running) -> None:
    """An executor the server has not heard from for longer than ``executorTimeout``."""
    follower = server.app.state.services.follower
    follower.state.executors["cluster-1"].last_seen -= 3600
    try:
        response = read_log(server, {"jobId": running.job_id})
    finally:
        follower.state.executors["cluster-1"].last_seen += 3600
    assert response.status_code == 503
    assert "has not been heard from for" in response.json()["detail"]


def test_an_answer_nobody_waits_for_is_404(server: ApiServer) -> None:
    response = answer(server, {"requestId": "nobody-waits"})
    assert (response.status_code, response.json()["field"]) == (404, "requestId")


@pytest.mark.postgres
def test_replicas_pass_requests_and_answers_through_the_database(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The user asks replica A; the executor long-polls and answers replica B."""
    settings = Settings(scheduler=SchedulerServiceSettings(log_wait_seconds=LOG_WAIT))
    directory = tmp_path_factory.mktemp("replicas")
    with (
        database_url_for("postgres", directory) as url,
        serving(url, settings) as replica_a,
        serving(url, settings) as replica_b,
    ):
        job = run_a_job(replica_a, replica_b)
        replica_a.run(replica_a.app.state.services.follower.catch_up())  # has heard of cluster-1
        executor = Executor(replica_b, job.run_id, {"lines": [{"line": "from b"}]})
        executor.start()
        executor.polling.wait()
        response = read_log(replica_a, {"jobId": job.job_id})
        executor.join(30)
    assert response.status_code == 200, response.text
    assert response.json() == {"log": [{"line": "from b"}]}
