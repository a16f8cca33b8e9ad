"""A pruned job answers exactly as an id never submitted, on every REST surface; metrics show pruning."""

from __future__ import annotations

import time
from typing import Any

import httpx

from armada.client import ArmadaClient
from armada.model import events as ev
from armada.model.ids import new_job_id
from armada.services.retention import Pruner
from armada.services.settings import RetentionSettings
from tests.api.jobs import item, start
from tests.servers import ApiServer

NEVER = "01j0000000000000000never00"


def answers(server: ApiServer, queue: str, job_id: str, run_id: str) -> list[tuple[int, Any]]:
    """Every surface's answer about ``job_id`` (and its run), with the id itself written as ``ID``."""
    calls: list[tuple[str, str, dict[str, Any] | None]] = [
        ("POST", "/v1/job/status", {"jobIds": [job_id]}),
        ("POST", "/v1/job/details", {"jobIds": [job_id], "expandJobSpec": True, "expandJobRun": True}),
        ("POST", "/v1/run/details", {"runIds": [run_id]}),
        ("POST", "/v1/job/errors", {"jobIds": [job_id]}),
        ("GET", f"/api/v1/jobs/{job_id}", None),
        ("POST", "/api/v1/jobs", {"filter": {"queue": queue, "jobId": job_id}}),
        ("POST", "/api/v1/jobCount", {"filter": {"queue": queue, "jobId": job_id}}),
        ("POST", "/v1/job/cancel", {"queue": queue, "jobSetId": "set", "jobIds": [job_id]}),
        (
            "POST",
            "/v1/job/reprioritize",
            {"queue": queue, "jobSetId": "set", "jobIds": [job_id], "newPriority": 3},
        ),
        ("POST", "/v1/job/preempt", {"queue": queue, "jobSetId": "set", "jobIds": [job_id]}),
        ("POST", "/v1/binoculars/log", {"jobId": job_id, "podNumber": 0, "logOptions": {}}),
    ]
    found = []
    for method, path, body in calls:
        response = httpx.request(method, server.url + path, json=body, timeout=30)
        text = response.text.replace(job_id, "ID").replace(run_id, "RUN")
        found.append((response.status_code, f"{method} {path.replace(job_id, 'ID')}: {text}"))
    return found


def prune_all_finished(server: ApiServer) -> int:
    """Prune every finished job now (their last transition is over a second old a second from now)."""
    server.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])  # the newest event is kept
    pruner = Pruner(server.store, RetentionSettings(expire_after="1s"), clock=lambda: time.time() + 60)
    return server.run(pruner.prune_once())


def test_a_pruned_job_answers_as_one_never_submitted(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    run_id = start(server, queue, "set", job_id)
    server.append(
        [ev.JobSucceeded(queue=queue, job_set_id="set", job_id=job_id, run_id=run_id, cluster_id="cluster-1")]
    )
    [waiting] = client.submit_jobs(queue, "set", [item()])  # not finished: kept
    before = answers(server, queue, job_id, run_id)
    assert before != answers(server, queue, NEVER, "01j0000000000000000norun0")

    assert prune_all_finished(server) >= 1
    assert answers(server, queue, job_id, run_id) == answers(
        server, queue, NEVER, "01j0000000000000000norun0"
    )
    assert client.job_status([waiting]) == {waiting: "QUEUED"}
    unknown = new_job_id()
    assert client.job_status([job_id, unknown]) == {job_id: "UNKNOWN", unknown: "UNKNOWN"}


def test_metrics_count_pruned_jobs_and_show_the_database_size(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    client.cancel_jobs(queue, "set", [job_id])
    assert prune_all_finished(server) >= 1  # (another pruner than the server's: its own counter)
    metrics = httpx.get(f"{server.url}/metrics").text
    assert "armada_retention_pruned_jobs_total " in metrics
    assert "armada_retention_oldest_retained_seconds " in metrics
    size = next(line for line in metrics.splitlines() if line.startswith("armada_database_size_bytes "))
    assert float(size.split()[1]) > 0
