"""Over real HTTP: records this version cannot decode, planted in the log and the views, stop
no reader. Event streams end cleanly, listings answer, leases flow, the job they belong to
is failed with a clear reason, and the damage is counted in the metrics.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from armada.client import ArmadaClient
from tests.api.jobs import item
from tests.metrics import parse_samples, value
from tests.planting import (
    plant_future_event,
    plant_garbage_event,
    plant_infinite_queue,
    plant_nan_priority_job,
)
from tests.servers import EXECUTOR_HEADERS, ApiServer


def _stream(server: ApiServer, queue: str, job_set: str) -> list[dict[str, Any]]:
    response = httpx.post(f"{server.url}/v1/job-set/{queue}/{job_set}", json={}, timeout=30)
    assert response.status_code == 200, response.text
    return [json.loads(line)["result"] for line in response.text.splitlines()]


def _wait_for_state(client: ArmadaClient, job_id: str, state: str) -> str:
    deadline = time.monotonic() + 30
    while (found := client.job_status([job_id])[job_id]) != state and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_planted_unreadable_records_stop_no_reader(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    bad = server.run(plant_nan_priority_job(server.store, queue, "poisoned"))
    server.run(plant_garbage_event(server.store, queue, "poisoned", bad.id))
    broken = f"{queue}-broken"
    server.run(plant_infinite_queue(server.store, broken))
    [good] = client.submit_jobs(queue, "poisoned", [item()])

    assert _wait_for_state(client, bad.id, "FAILED") == "FAILED"
    messages = _stream(server, queue, "poisoned")
    by_job: dict[str, list[str]] = {}
    for message in messages:
        ((kind, fields),) = message["message"].items()
        by_job.setdefault(fields["jobId"], []).append(kind)
        if kind == "failed":
            assert "cannot be read" in fields["reason"]
    assert by_job == {bad.id: ["queued", "failed"], good: ["submitted", "queued"]}

    listing = httpx.get(f"{server.url}/v1/batched/queues", timeout=30)
    assert listing.status_code == 200, listing.text
    assert f'"{queue}"' in listing.text and f'"{broken}"' not in listing.text
    unreadable = httpx.get(f"{server.url}/v1/queue/{broken}", timeout=30)
    assert unreadable.status_code == 409 and "cannot read" in unreadable.json()["detail"]
    repaired = httpx.put(f"{server.url}/v1/queue/{broken}", json={"name": broken, "priorityFactor": 2})
    assert repaired.status_code == 200, repaired.text
    assert client.get_queue(broken).priority_factor == 2

    details = client.job_details([bad.id, good], expand_spec=True)
    assert details[bad.id].job_spec is None and details[good].job_spec is not None
    lookout = httpx.get(f"{server.url}/api/v1/jobs/{bad.id}", timeout=30)
    assert lookout.status_code == 200, lookout.text
    assert "unreadable" in [event["type"] for event in lookout.json()["events"]]

    nodes = [{"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi"}}]
    lease = httpx.post(
        f"{server.url}/v1/executor/lease",
        json={"executorId": "e1", "pool": "p", "nodes": nodes},
        headers=EXECUTOR_HEADERS,
    )
    assert lease.status_code == 200, lease.text

    samples = parse_samples(httpx.get(f"{server.url}/metrics", timeout=30).text)
    assert value(samples, "armada_undecodable_records_total", kind="event") >= 2
    assert value(samples, "armada_undecodable_records_total", kind="queue") >= 1


def test_an_event_type_of_a_newer_version_is_skipped_and_its_job_left_alone(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    """During a rolling upgrade a newer replica may append an event type this version does not
    know: readers skip it, as an unreadable record, but its job is not failed (a garbage event
    of another job, noticed in the same read, is: the quarantine has run when it is failed)."""
    newer, broken = client.submit_jobs(queue, "rolling", [item(), item()])
    server.run(plant_future_event(server.store, queue, "rolling", newer))
    server.run(plant_garbage_event(server.store, queue, "rolling", broken))

    assert _wait_for_state(client, broken, "FAILED") == "FAILED"
    kinds = [next(iter(message["message"])) for message in _stream(server, queue, "rolling")]
    assert kinds == ["submitted", "queued", "submitted", "queued", "failed"]
    assert client.job_status([newer])[newer] == "QUEUED"
    [event] = [e for e in client.job_set_events(queue, "rolling") if e.event.type == "failed"]
    assert event.event.job_id == broken
