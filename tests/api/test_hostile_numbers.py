"""Hostile numbers over real HTTP: every numeric field of every request family refuses
non-finite and out-of-range values, however they are spelt, with a 400 that names the
field, and stores nothing.

Request bodies are decoded leniently (numbers may arrive as strings), so ``"NaN"`` used to
become a float NaN, was stored as JSON ``null``, and then failed every later reader.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.api.jobs import pod_spec, raw_item
from tests.servers import EXECUTOR_HEADERS, ApiServer

#: A placeholder string in a JSON body, replaced (with its quotes) by a raw JSON literal.
HOLE = "@@"
#: How a hostile number can be spelt in JSON: as strings the lax decoder converts, as a
#: literal beyond float64, and as an integer far beyond 64 bits.
HOSTILE = {
    "NaN": '"NaN"',
    "Infinity": '"Infinity"',
    "-Infinity": '"-Infinity"',
    "1e999": '"1e999"',
    "1e400": "1e400",
    "huge integer": str(10**40),
}


def _submit(**fields: Any) -> dict[str, Any]:
    return {"queue": "QUEUE", "jobSetId": "hostile", "jobRequestItems": [raw_item(**fields)]}


def _resources(value: str) -> dict[str, Any]:
    return pod_spec(cpu=value, memory="64Mi")


def _queue(**fields: Any) -> dict[str, Any]:
    return {"name": "QUEUE", **fields}


def _limits(fractions: dict[str, Any]) -> dict[str, Any]:
    return {"armada-default": fractions}


def _lease(**fields: Any) -> dict[str, Any]:
    return {"executorId": "hostile-executor", "pool": "default", **fields}


def _node(**fields: Any) -> dict[str, Any]:
    return _lease(nodes=[{"name": "node-1", "allocatable": {"cpu": "8", "memory": "8Gi"}, **fields}])


def _run_event(**fields: Any) -> dict[str, Any]:
    event = {"runId": "r", "jobId": "j", "kind": "failed", **fields}
    return {"executorId": "hostile-executor", "events": [event]}


#: (family, method, path, body with HOLE where the number goes, the field the 400 must name)
FAMILIES: list[tuple[str, str, str, dict[str, Any], str]] = [
    ("priority", "POST", "/v1/job/submit", _submit(priority=HOLE), "jobRequestItems[0].priority"),
    (
        "newPriority",
        "POST",
        "/v1/job/reprioritize",
        {"queue": "QUEUE", "jobSetId": "s", "jobIds": ["x"], "newPriority": HOLE},
        "newPriority",
    ),
    ("priorityFactor on create", "POST", "/v1/queue", _queue(name="hostile-q", priorityFactor=HOLE), ""),
    ("priorityFactor on update", "PUT", "/v1/queue/QUEUE", _queue(priorityFactor=HOLE), "priorityFactor"),
    (
        "priorityFactor in a batch",
        "PUT",
        "/v1/batched/update_queues",
        {"queues": [_queue(priorityFactor=HOLE)]},
        "queues[0].priorityFactor",
    ),
    (
        "resourceLimits",
        "PUT",
        "/v1/queue/QUEUE",
        _queue(resourceLimits={"cpu": HOLE}),
        "resourceLimits.cpu",
    ),
    (
        "resourceLimitsByPriorityClassName",
        "PUT",
        "/v1/queue/QUEUE",
        _queue(resourceLimitsByPriorityClassName=_limits({"maximumResourceFraction": {"cpu": HOLE}})),
        "resourceLimitsByPriorityClassName.armada-default.maximumResourceFraction.cpu",
    ),
    (
        "resourceLimitsByPriorityClassName by pool",
        "PUT",
        "/v1/queue/QUEUE",
        _queue(
            resourceLimitsByPriorityClassName=_limits(
                {"maximumResourceFractionByPool": {"gpu": {"maximumResourceFraction": {"cpu": HOLE}}}}
            )
        ),
        "maximumResourceFractionByPool.gpu.maximumResourceFraction.cpu",
    ),
    (
        "resources quantity",
        "POST",
        "/v1/job/submit",
        _submit(podSpec=_resources(HOLE)),
        "jobRequestItems[0].podSpec.containers[0].resources.requests.cpu",
    ),
    ("waitMillis", "POST", "/v1/executor/lease", _lease(waitMillis=HOLE), "waitMillis"),
    ("maxNewLeases", "POST", "/v1/executor/lease", _lease(maxNewLeases=HOLE), "maxNewLeases"),
    (
        "runsHeld",
        "POST",
        "/v1/executor/lease",
        _lease(reportId="b", runsBase="a", runsHeld=HOLE),
        "runsHeld",
    ),
    (
        "node allocatable",
        "POST",
        "/v1/executor/lease",
        _lease(nodes=[{"name": "node-1", "allocatable": {"cpu": HOLE}}]),
        "nodes[0].allocatable.cpu",
    ),
    (
        "node allocated to other pods",
        "POST",
        "/v1/executor/lease",
        _node(allocatedNonArmada={"memory": HOLE}),
        "nodes[0].allocatedNonArmada.memory",
    ),
    ("run report exit code", "POST", "/v1/executor/events", _run_event(exitCode=HOLE), "events[0].exitCode"),
    ("Lookout skip", "POST", "/api/v1/jobs", {"skip": HOLE}, "skip"),
    ("Lookout take", "POST", "/api/v1/jobs", {"take": HOLE}, "take"),
    ("Lookout groups take", "POST", "/api/v1/jobGroups", {"take": HOLE}, "take"),
]


def _body(template: dict[str, Any], queue: str, literal: str) -> bytes:
    text = json.dumps(template).replace(json.dumps(HOLE), literal).replace("QUEUE", queue)
    return text.encode()


def _expect_problem(response: httpx.Response, field: str) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == 400
    assert problem.get("field", "").endswith(field), problem


@pytest.mark.parametrize("literal", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize(
    ("method", "path", "template", "field"), [f[1:] for f in FAMILIES], ids=[f[0] for f in FAMILIES]
)
def test_hostile_numbers_are_400s_naming_the_field_and_store_nothing(
    server: ApiServer, queue: str, method: str, path: str, template: dict[str, Any], field: str, literal: str
) -> None:
    head = server.head()
    body = _body(template, queue, literal)
    response = server.send_json(method, path.replace("QUEUE", queue), body, timeout=30)
    _expect_problem(response, field or "priorityFactor")
    assert server.head() == head


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1", "1e999", str(10**40)])
def test_a_hostile_page_size_is_a_400(server: ApiServer, value: str) -> None:
    response = httpx.get(f"{server.url}/v1/batched/queues", params={"num": value}, timeout=30)
    assert response.status_code == 400, response.text
    assert "num" in response.text


def test_listings_and_leases_keep_working_after_hostile_requests(server: ApiServer, queue: str) -> None:
    """The outage of the report: after the hostile requests, everyone is still served."""
    for literal in HOSTILE.values():
        httpx.post(f"{server.url}/v1/job/submit", content=_body(_submit(priority=HOLE), queue, literal))
        httpx.put(
            f"{server.url}/v1/queue/{queue}", content=_body(_queue(priorityFactor=HOLE), queue, literal)
        )
    listing = httpx.get(f"{server.url}/v1/batched/queues", timeout=30)
    assert listing.status_code == 200, listing.text
    assert queue in listing.text
    lease = httpx.post(f"{server.url}/v1/executor/lease", json=_node(), timeout=30, headers=EXECUTOR_HEADERS)
    assert lease.status_code == 200, lease.text
