"""The OpenAPI document at /schema describes what the routes really do."""

from __future__ import annotations

import httpx

from tests.servers import ApiServer

ENDPOINTS = [
    ("post", "/v1/queue"),
    ("put", "/v1/queue/{name}"),
    ("delete", "/v1/queue/{name}"),
    ("get", "/v1/queue/{name}"),
    ("post", "/v1/queue/{name}/cordon"),
    ("post", "/v1/queue/{name}/uncordon"),
    ("get", "/v1/batched/queues"),
    ("post", "/v1/batched/create_queues"),
    ("put", "/v1/batched/update_queues"),
    ("post", "/v1/queues/active"),
    ("post", "/v1/job/submit"),
    ("post", "/v1/job/cancel"),
    ("post", "/v1/jobset/cancel"),
    ("post", "/v1/job/reprioritize"),
    ("post", "/v1/job/preempt"),
    ("post", "/v1/job/status"),
    ("post", "/v1/job/details"),
    ("post", "/v1/job/forecast"),
    ("post", "/v1/run/details"),
    ("post", "/v1/job/errors"),
    ("post", "/v1/job-set/{queue}/{job_set_id}"),
]


def test_every_endpoint_is_documented_with_problem_errors(server: ApiServer) -> None:
    document = httpx.get(f"{server.url}/schema/openapi.json").json()
    for method, path in ENDPOINTS:
        operation = document["paths"][path][method]
        responses = operation["responses"]
        assert list(responses["400"]["content"]) == ["application/problem+json"], (method, path)
        assert "200" in responses, (method, path)
    submit = document["paths"]["/v1/job/submit"]["post"]
    assert {"404", "409"} <= set(submit["responses"])
    stream = document["paths"]["/v1/job-set/{queue}/{job_set_id}"]["post"]["responses"]["200"]
    assert list(stream["content"]) == ["application/x-ndjson"]
    queues = document["paths"]["/v1/batched/queues"]["get"]["responses"]["200"]
    assert list(queues["content"]) == ["application/x-ndjson"]
    health = document["paths"]["/health"]["get"]["responses"]
    assert {"204", "503"} <= set(health)
