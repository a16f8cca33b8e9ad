"""Retry policies over HTTP: CRUD at upstream's paths, validation, and the 409 on delete."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.servers import ApiServer


@pytest.fixture
def http(server: ApiServer) -> Any:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def policy(name: str, **changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "apiVersion": "armadaproject.io/v1beta1",
        "kind": "RetryPolicy",
        "name": name,
        "retryLimit": 3,
        "defaultAction": "Fail",
        "rules": [
            {"action": "Fail", "onCategory": "user-error"},
            {"action": "Retry", "onCategory": "oom", "mutate": {"resources": {"memory": {"factor": 1.5}}}},
            {
                "action": "Retry",
                "onCategory": "internal",
                "onSubcategory": "node-failure",
                "mutate": {"affinity": {"avoidSameNode": True}},
            },
        ],
    }
    return spec | changes


def test_crud_and_delete_refused_while_a_queue_names_the_policy(http: httpx.Client) -> None:
    name = f"p-{uuid.uuid4().hex[:8]}"
    assert http.post("/v1/retry-policy", json=policy(name)).status_code == 200
    assert http.post("/v1/retry-policy", json=policy(name)).status_code == 409
    got = http.get(f"/v1/retry-policy/{name}").json()
    assert got["retryLimit"] == 3 and got["rules"][1]["mutate"]["resources"]["memory"]["factor"] == 1.5
    assert http.put(f"/v1/retry-policy/{name}", json=policy(name, retryLimit=5)).status_code == 200
    assert http.get(f"/v1/retry-policy/{name}").json()["retryLimit"] == 5
    names = [p["name"] for p in http.get("/v1/retry-policies").json()["retryPolicies"]]
    assert name in names

    queue = f"q-{uuid.uuid4().hex[:8]}"
    assert http.post("/v1/queue", json={"name": queue, "retryPolicies": [name]}).status_code == 200
    assert http.get(f"/v1/queue/{queue}").json()["retryPolicies"] == [name]
    refused = http.delete(f"/v1/retry-policy/{name}")
    assert refused.status_code == 409 and queue in refused.json()["detail"]
    assert http.put(f"/v1/queue/{queue}", json={"name": queue}).status_code == 200
    assert http.delete(f"/v1/retry-policy/{name}").status_code == 200
    assert http.get(f"/v1/retry-policy/{name}").status_code == 404
    assert http.delete(f"/v1/retry-policy/{name}").status_code == 404
    assert http.put(f"/v1/retry-policy/{name}", json=policy(name)).status_code == 404


def test_a_queue_may_only_name_existing_policies(http: httpx.Client) -> None:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    response = http.post("/v1/queue", json={"name": queue, "retryPolicies": ["nope"]})
    assert response.status_code == 400, response.text
    assert "retryPolicies[0]" in response.text


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "bad name!"}, "name"),
        ({"retryLimit": -1}, "retryLimit"),
        ({"defaultAction": "Maybe"}, "defaultAction"),
        ({"rules": [{"action": "Retry"}]}, "rules[0].onCategory"),
        (
            {
                "rules": [
                    {"action": "Fail", "onCategory": "x", "mutate": {"affinity": {"avoidSameNode": True}}}
                ]
            },
            "rules[0].mutate",
        ),
        (
            {
                "rules": [
                    {
                        "action": "Retry",
                        "onCategory": "x",
                        "mutate": {"resources": {"memory": {"factor": 1.0}}},
                    }
                ]
            },
            "factor",
        ),
        (
            {"rules": [{"action": "Retry", "onCategory": "x", "mutate": {"resources": {"memory": {}}}}]},
            "rules[0].mutate.resources.memory",
        ),
        (
            {
                "rules": [
                    {
                        "action": "Retry",
                        "onCategory": "x",
                        "mutate": {"resources": {"memory": {"static": "lots"}}},
                    }
                ]
            },
            "rules[0].mutate.resources.memory.static",
        ),
        ({"retries": 3}, "retries"),
    ],
)
def test_bad_policies_are_4xx_problems_naming_the_field(
    http: httpx.Client, changes: dict[str, Any], field: str
) -> None:
    name = f"p-{uuid.uuid4().hex[:8]}"
    response = http.post("/v1/retry-policy", json=policy(name) | changes)
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert field in response.text, response.text
    assert http.get(f"/v1/retry-policy/{name}").status_code == 404
