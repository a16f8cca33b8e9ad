"""Submission over real HTTP: acceptance, client-id deduplication and every validation rule."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from armada.client import ArmadaApiError, ArmadaClient
from armada.eventstore import schema
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION as CARDINALITY
from armada.model.jobs import GANG_ID_ANNOTATION as GANG_ID
from armada.model.jobs import GANG_NODE_UNIFORMITY_ANNOTATION as UNIFORMITY
from armada.scheduling.runtimes import EXPECTED_RUNTIME_ANNOTATION as EXPECTED_RUNTIME
from tests.api.jobs import item, pod_spec, raw_item
from tests.servers import ApiServer

ULID = re.compile(r"^[0-9a-hjkmnp-tv-z]{26}$")


def test_submitted_jobs_are_queued_with_defaults_applied(client: ArmadaClient, queue: str) -> None:
    job_ids = client.submit_jobs(queue, "set-1", [item(), item(priority=3, labels={"a": "b"})])
    assert len(job_ids) == 2
    assert all(ULID.match(job_id) for job_id in job_ids)
    assert client.job_status(job_ids) == dict.fromkeys(job_ids, "QUEUED")
    details = client.job_details(job_ids, expand_spec=True)
    spec = details[job_ids[1]].job_spec
    assert spec is not None
    assert (spec.owner, spec.priority, spec.labels) == ("anonymous", 3, {"a": "b"})
    assert spec.priority_class_name == "armada-default"
    assert spec.pod_spec["priorityClassName"] == "armada-default"
    assert spec.scheduling_resource_requirements.requests == {"cpu": "1", "memory": "64Mi"}
    events = [e.event.type for e in client.job_set_events(queue, "set-1")]
    assert events == ["submitted", "queued", "submitted", "queued"]


def test_pod_specs_list_and_init_containers(client: ArmadaClient, queue: str) -> None:
    spec = pod_spec(cpu="500m", memory="1Gi")
    spec["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}},
    ]
    [job_id] = client.submit_jobs(queue, "set", [item(pod_spec=None, pod_specs=[spec])])
    job = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert job is not None
    assert job.scheduling_resource_requirements.requests == {"cpu": "2", "memory": "1Gi"}


def test_repeated_client_id_returns_the_original_job(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [first] = client.submit_jobs(queue, "set", [item(client_id="abc")])
    head = server.head()
    again = client.submit_jobs(queue, "set", [item(client_id="abc"), item(client_id="abc")])
    assert again == [first, first]
    assert server.head() == head
    [other, same] = client.submit_jobs(queue, "set", [item(client_id="new"), item(client_id="new")])
    assert other == same != first


def test_queue_must_exist(client: ArmadaClient) -> None:
    with pytest.raises(ArmadaApiError) as missing:
        client.submit_jobs("no-such-queue", "set", [item()])
    assert (missing.value.status, missing.value.field) == (404, "queue")


def _container(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "main", "image": "alpine", "resources": resources}]}


def _gang(gang_id: str = "g", cardinality: str = "2", **extra: str) -> dict[str, str]:
    return {GANG_ID: gang_id, CARDINALITY: cardinality, **extra}


BIG = {"containers": pod_spec()["containers"], "env": ["x" * 70_000]}

#: (case, request body changes, field the problem names)
INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("empty job set", {"jobSetId": ""}, "jobSetId"),
    ("long job set", {"jobSetId": "x" * 1024}, "jobSetId"),
    ("no items", {"jobRequestItems": []}, "jobRequestItems"),
    ("long client id", {"jobRequestItems": [raw_item(clientId="c" * 101)]}, "jobRequestItems[0].clientId"),
    ("empty namespace", {"jobRequestItems": [raw_item(namespace="")]}, "jobRequestItems[0].namespace"),
    ("no pod spec", {"jobRequestItems": [raw_item(podSpec=None)]}, "jobRequestItems[0].podSpec"),
    (
        "two pod specs",
        {"jobRequestItems": [raw_item(podSpecs=[pod_spec(), pod_spec()], podSpec=None)]},
        "jobRequestItems[0].podSpec",
    ),
    (
        "pod spec and pod specs",
        {"jobRequestItems": [raw_item(podSpecs=[pod_spec()])]},
        "jobRequestItems[0].podSpec",
    ),
    ("pod spec > 64 KiB", {"jobRequestItems": [raw_item(podSpec=BIG)]}, "jobRequestItems[0].podSpec"),
    ("no containers", {"jobRequestItems": [raw_item(podSpec={"containers": []})]}, "podSpec.containers"),
    ("no resources", {"jobRequestItems": [raw_item(podSpec=_container())]}, "containers[0].resources"),
    (
        "requests only",
        {"jobRequestItems": [raw_item(podSpec=_container(requests={"cpu": "1", "memory": "1Gi"}))]},
        "containers[0].resources",
    ),
    (
        "different resources",
        {"jobRequestItems": [raw_item(podSpec=_container(requests={"cpu": "1"}, limits={"memory": "1Gi"}))]},
        "containers[0].resources",
    ),
    (
        "negative",
        {"jobRequestItems": [raw_item(podSpec=_container(requests={"cpu": "-1"}, limits={"cpu": "-1"}))]},
        "resources.requests.cpu",
    ),
    (
        "not a quantity",
        {"jobRequestItems": [raw_item(podSpec=_container(requests={"cpu": "lots"}, limits={"cpu": "lots"}))]},
        "resources.requests.cpu",
    ),
    (
        "limits differ",
        {"jobRequestItems": [raw_item(podSpec=_container(requests={"cpu": "1"}, limits={"cpu": "2"}))]},
        "resources.limits.cpu",
    ),
    (
        "memory below 1Mi",
        {"jobRequestItems": [raw_item(podSpec=pod_spec(memory="512Ki"))]},
        "jobRequestItems[0].podSpec.containers",
    ),
    (
        "unknown priority class",
        {"jobRequestItems": [raw_item(podSpec=pod_spec(priorityClassName="urgent"))]},
        "podSpec.priorityClassName",
    ),
    ("empty gang id", {"jobRequestItems": [raw_item(annotations=_gang(gang_id=""))]}, GANG_ID),
    (
        "gang cardinality text",
        {"jobRequestItems": [raw_item(annotations=_gang(cardinality="two"))]},
        CARDINALITY,
    ),
    ("gang cardinality 0", {"jobRequestItems": [raw_item(annotations=_gang(cardinality="0"))]}, CARDINALITY),
    (
        "gang members disagree on cardinality",
        {"jobRequestItems": [raw_item(annotations=_gang()), raw_item(annotations=_gang(cardinality="3"))]},
        "jobRequestItems[1].annotations",
    ),
    (
        "gang members disagree on uniformity",
        {
            "jobRequestItems": [
                raw_item(annotations=_gang(**{UNIFORMITY: "zone"})),
                raw_item(annotations=_gang(**{UNIFORMITY: "rack"})),
            ]
        },
        "jobRequestItems[1].annotations",
    ),
    (
        "gang larger than its cardinality",
        {"jobRequestItems": [raw_item(annotations=_gang(cardinality="1"))] * 2},
        "jobRequestItems[1].annotations",
    ),
    (
        "second item bad",
        {"jobRequestItems": [raw_item(), raw_item(namespace="")]},
        "jobRequestItems[1].namespace",
    ),
    (
        "expected runtime not a duration",
        {"jobRequestItems": [raw_item(annotations={EXPECTED_RUNTIME: "soon"})]},
        f"jobRequestItems[0].annotations.{EXPECTED_RUNTIME}",
    ),
    (
        "expected runtime zero",
        {"jobRequestItems": [raw_item(annotations={EXPECTED_RUNTIME: "0s"})]},
        f"jobRequestItems[0].annotations.{EXPECTED_RUNTIME}",
    ),
    ("unknown top-level field", {"priority": 1}, "priority"),
    ("unknown item field", {"jobRequestItems": [raw_item(colour="red")]}, "jobRequestItems[0].colour"),
    ("wrong type", {"jobRequestItems": [raw_item(priority="high")]}, "jobRequestItems[0].priority"),
    ("items not a list", {"jobRequestItems": {}}, "jobRequestItems"),
]


@pytest.mark.parametrize(("changes", "field"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_requests_are_rejected_whole(
    server: ApiServer, queue: str, changes: dict[str, Any], field: str
) -> None:
    body = {"queue": queue, "jobSetId": "set", "jobRequestItems": [raw_item()], **changes}
    head = server.head()
    response = httpx.post(f"{server.url}/v1/job/submit", json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert field in (problem.get("field") or ""), problem
    assert problem["detail"]
    assert server.head() == head


@pytest.mark.parametrize("body", [b"{", b"[]", b'"text"', b"", b'{"queue": 1}'])
def test_malformed_bodies_are_400(server: ApiServer, body: bytes) -> None:
    response = httpx.post(
        f"{server.url}/v1/job/submit", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["status"] == 400


def test_an_expected_runtime_hint_is_accepted(client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item(annotations={EXPECTED_RUNTIME: "1h30m"})])
    assert client.job_status([job_id]) == {job_id: "QUEUED"}


def test_a_complete_gang_is_accepted(client: ArmadaClient, queue: str) -> None:
    gang = _gang(cardinality="2", **{UNIFORMITY: "zone"})
    assert len(client.submit_jobs(queue, "set", [item(annotations=gang), item(annotations=gang)])) == 2


def test_preemptible_class_is_accepted(client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(
        queue, "set", [item(pod_spec=pod_spec(priorityClassName="armada-preemptible"))]
    )
    job = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert job is not None
    assert job.priority_class_name == "armada-preemptible"


def test_views_hold_json_objects(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item(annotations={"team": "a"})])

    async def annotations() -> object:
        async with server.store.engine.connect() as conn:
            return await conn.scalar(select(schema.jobs.c.annotations).where(schema.jobs.c.job_id == job_id))

    assert server.run(annotations()) == {"team": "a"}


def test_upstream_item_fields(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    """requiredNodeLabels join the node selector, externalJobUri becomes upstream's annotation
    (and finds the job again), scheduler must be ours (services and ingress: test_exposed_ports)."""
    body = {
        "queue": queue,
        "jobSetId": "set",
        "jobRequestItems": [
            raw_item(
                podSpec=pod_spec(nodeSelector={"zone": "a"}),
                requiredNodeLabels={"gpu": "yes"},
                externalJobUri="https://airflow/run/1",
                scheduler="armada",
                ingress=[],
                services=[],
            )
        ],
    }
    with httpx.Client(base_url=server.url) as http:
        response = http.post("/v1/job/submit", json=body)
        assert response.status_code == 200, response.text
        job_id = response.json()["jobResponseItems"][0]["jobId"]
        spec = client.job_details([job_id], expand_spec=True)[job_id].job_spec
        assert spec is not None
        assert spec.pod_spec["nodeSelector"] == {"zone": "a", "gpu": "yes"}
        assert spec.annotations["armadaproject.io/externalJobUri"] == "https://airflow/run/1"
        found = http.post(
            "/v1/job/statusUsingExternalJobUri",
            json={"queue": queue, "jobset": "set", "externalJobUri": "https://airflow/run/1"},
        )
        assert found.json() == {"jobStates": {job_id: "QUEUED"}}
        refused = http.post("/v1/job/submit", json={**body, "jobRequestItems": [raw_item(scheduler="other")]})
        assert refused.status_code == 400
        assert refused.json()["field"] == "jobRequestItems[0].scheduler"


def test_queue_wide_cancel_and_preempt(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    job_ids = client.submit_jobs(queue, "set", [item(), item()])
    with httpx.Client(base_url=server.url) as http:
        preempted = http.post(f"/v1/queue/{queue}/preempt", json={})
        assert preempted.json() == {}  # queued jobs hold no node: nothing to preempt
        none = http.post(f"/v1/queue/{queue}/cancel", json={"jobStates": ["RUNNING"]})
        assert none.json() == {}
        cancelled = http.post(f"/v1/queue/{queue}/cancel", json={"priorityClasses": ["armada-default"]})
        assert sorted(cancelled.json()["cancelledIds"]) == sorted(job_ids)
        assert http.post("/v1/queue/nope-nope/cancel").status_code == 404
        assert http.post(f"/v1/queue/{queue}/cancel", json={"jobStates": ["BOGUS"]}).status_code == 400
    assert set(client.job_status(job_ids).values()) == {"CANCELLED"}
