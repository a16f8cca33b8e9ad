"""Hostile input over real HTTP: every bad request is a 4xx problem and changes nothing;
odd but legal strings are stored verbatim (SQL metacharacters are data, never SQL)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from armada.client import ArmadaClient
from tests.api.jobs import pod_spec, raw_item
from tests.servers import EXECUTOR_HEADERS, ApiServer

SQL = "'; DROP TABLE jobs; -- \" OR 1=1 %_ \\ ..%2F"


def _submit(**changes: Any) -> dict[str, Any]:
    return {"queue": "QUEUE", "jobSetId": "set", "jobRequestItems": [raw_item()], **changes}


def _item_json(**fields: Any) -> str:
    return json.dumps(_submit(jobRequestItems=[raw_item(**fields)]))


def _resources(**quantities: str) -> dict[str, Any]:
    limits = {"cpu": "1", "memory": "1Gi", **quantities}
    return {"containers": [{"name": "m", "resources": {"requests": limits, "limits": dict(limits)}}]}


#: (case, method, path, raw body with QUEUE for the test's queue, expected status)
BAD: list[tuple[str, str, str, bytes, int]] = [
    ("deep JSON", "POST", "/v1/job/submit", b"[" * 100_000 + b"]" * 100_000, 400),
    (
        "deep JSON in a pod spec",
        "POST",
        "/v1/job/submit",
        _item_json(podSpec={}).replace("{}", "[" * 5000 + "]" * 5000).encode(),
        400,
    ),
    ("invalid UTF-8", "POST", "/v1/job/submit", b'{"queue": "QUEUE", "jobSetId": "s\xff\xfe"}', 400),
    ("NaN priority", "POST", "/v1/job/submit", _item_json(priority=7).replace("7", "NaN").encode(), 400),
    ("1e400 priority", "POST", "/v1/job/submit", _item_json(priority=7).replace("7", "1e400").encode(), 400),
    ("cpu 1e400", "POST", "/v1/job/submit", _item_json(podSpec=pod_spec(cpu="1e400")).encode(), 400),
    ("cpu Infinity", "POST", "/v1/job/submit", _item_json(podSpec=pod_spec(cpu="Infinity")).encode(), 400),
    (
        "absurd memory",
        "POST",
        "/v1/job/submit",
        _item_json(podSpec=pod_spec(memory="999999Ei")).encode(),
        400,
    ),
    (
        "negative gpu",
        "POST",
        "/v1/job/submit",
        _item_json(podSpec=_resources(**{"nvidia.com/gpu": "-1"})).encode(),
        400,
    ),
    (
        "unknown priority class",
        "POST",
        "/v1/job/submit",
        _item_json(podSpec=pod_spec(priorityClassName="x")).encode(),
        400,
    ),
    ("NUL in a job set id", "POST", "/v1/job/submit", json.dumps(_submit(jobSetId="a\0b")).encode(), 400),
    (
        "control character in a job set id",
        "POST",
        "/v1/job/submit",
        json.dumps(_submit(jobSetId="a\nb")).encode(),
        400,
    ),
    ("slash in a job set id", "POST", "/v1/job/submit", json.dumps(_submit(jobSetId="../etc")).encode(), 400),
    ("NUL in an annotation", "POST", "/v1/job/submit", _item_json(annotations={"k": "\0"}).encode(), 400),
    ("long namespace", "POST", "/v1/job/submit", _item_json(namespace="n" * 257).encode(), 400),
    (
        "long gang id",
        "POST",
        "/v1/job/submit",
        _item_json(
            annotations={"armadaproject.io/gangId": "g" * 257, "armadaproject.io/gangCardinality": "1"}
        ).encode(),
        400,
    ),
    (
        "SQL as a queue name",
        "POST",
        "/v1/queue",
        json.dumps({"name": SQL, "priorityFactor": 1}).encode(),
        400,
    ),
    ("path traversal as a queue name", "POST", "/v1/queue", b'{"name": "../etc", "priorityFactor": 1}', 400),
    ("1e400 priority factor", "POST", "/v1/queue", b'{"name": "qx", "priorityFactor": 1e400}', 400),
    ("NUL in the path", "POST", "/v1/job-set/QUEUE/a%00b", b"{}", 400),
    ("path traversal in the path", "GET", "/v1/queue/..%2F..%2Fetc%2Fpasswd", b"", 404),
    (
        "huge message id",
        "POST",
        "/v1/job-set/QUEUE/set",
        json.dumps({"fromMessageId": "9" * 40}).encode(),
        400,
    ),
    ("NUL in a job id", "POST", "/v1/job/status", json.dumps({"jobIds": ["\0"]}).encode(), 400),
    (
        "1e400 new priority",
        "POST",
        "/v1/job/reprioritize",
        b'{"queue": "QUEUE", "jobSetId": "s", "jobIds": ["a"], "newPriority": 1e400}',
        400,
    ),
    (
        "long executor id",
        "POST",
        "/v1/executor/lease",
        json.dumps({"executorId": "e" * 300, "pool": "p"}).encode(),
        400,
    ),
    (
        "long report id",
        "POST",
        "/v1/executor/lease",
        json.dumps({"executorId": "e", "pool": "p", "reportId": "r" * 65}).encode(),
        400,
    ),
    (
        "long node name",
        "POST",
        "/v1/executor/lease",
        json.dumps({"executorId": "e", "pool": "p", "nodes": [{"name": "n" * 300}]}).encode(),
        400,
    ),
    (
        "body over the size limit",
        "POST",
        "/v1/job/submit",
        b'{"jobSetId": "' + b"x" * 40_000_000 + b'"}',
        413,
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_requests_are_problems_and_change_nothing(
    server: ApiServer, queue: str, method: str, path: str, body: bytes, status: int
) -> None:
    head = server.head()
    response = server.send_json(method, path.replace("QUEUE", queue), body.replace(b"QUEUE", queue.encode()))
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["status"] == status
    assert server.head() == head


def test_sql_metacharacters_and_odd_names_are_stored_verbatim(client: ArmadaClient, queue: str) -> None:
    # Label keys and values, annotation keys and namespaces follow Kubernetes' rules (no SQL
    # there: test_metadata_limits); free text is stored as it came.
    job_set = f"{SQL} .."
    annotations = {"sql": SQL, "escaped": r"\u0000"}  # a backslash and "u0000": text, not a NUL
    item = raw_item(clientId=SQL[:100], labels={"sql": "DROP_TABLE.jobs--1"}, annotations=annotations)
    response = httpx.post(
        f"{client.config.armada_url}/v1/job/submit",
        json={"queue": queue, "jobSetId": job_set, "jobRequestItems": [item]},
    )
    assert response.status_code == 200, response.text
    job_id = response.json()["jobResponseItems"][0]["jobId"]
    spec = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert spec is not None
    assert (spec.job_set_id, spec.client_id, spec.labels, spec.annotations) == (
        job_set,
        SQL[:100],
        {"sql": "DROP_TABLE.jobs--1"},
        annotations,
    )
    assert [e.event.job_id for e in client.job_set_events(queue, job_set)] == [job_id, job_id]
    assert client.cancel_jobs(queue, job_set, [job_id], reason=SQL[:50]) == [job_id]


def test_duplicate_client_ids_in_one_request_make_one_job(client: ArmadaClient, queue: str) -> None:
    response = httpx.post(
        f"{client.config.armada_url}/v1/job/submit",
        json={"queue": queue, "jobSetId": "dup", "jobRequestItems": [raw_item(clientId="same")] * 3},
    )
    assert response.status_code == 200, response.text
    ids = {entry["jobId"] for entry in response.json()["jobResponseItems"]}
    assert len(ids) == 1
    assert [e.event.type for e in client.job_set_events(queue, "dup")] == ["submitted", "queued"]


def test_ten_thousand_jobs_in_one_request_are_accepted_together(client: ArmadaClient, queue: str) -> None:
    body = {"queue": queue, "jobSetId": "bulk", "jobRequestItems": [raw_item()] * 10_000}
    response = httpx.post(f"{client.config.armada_url}/v1/job/submit", json=body, timeout=120)
    assert response.status_code == 200, response.text
    ids = [entry["jobId"] for entry in response.json()["jobResponseItems"]]
    assert len(set(ids)) == 10_000
    assert set(client.job_status(ids[::1000]).values()) == {"QUEUED"}


def test_a_lease_call_cannot_ask_for_a_long_hold(server: ApiServer) -> None:
    body = {"executorId": "c1", "pool": "default", "waitMillis": 75_282_465}
    response = httpx.post(f"{server.url}/v1/executor/lease", json=body, timeout=10, headers=EXECUTOR_HEADERS)
    assert response.status_code == 400
    assert "waitMillis" in response.text
