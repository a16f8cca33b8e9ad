"""Queue endpoints over real HTTP: CRUD, batched calls, cordoning, deletion rules."""

from __future__ import annotations

import uuid

import httpx
import msgspec
import pytest

from armada.client import ArmadaApiError, ArmadaClient, Conflict, NotFound
from armada.model.queues import Queue
from tests.api.jobs import item
from tests.servers import ApiServer


def fresh_name() -> str:
    return f"q-{uuid.uuid4().hex[:12]}"


def test_create_get_update_delete(client: ArmadaClient) -> None:
    name = fresh_name()
    client.create_queue(Queue(name=name))
    assert client.get_queue(name) == Queue(name=name, priority_factor=1.0)
    updated = Queue(name=name, priority_factor=2.0, user_owners=["alice"], labels={"team": "a"})
    client.update_queue(updated)
    assert client.get_queue(name) == updated
    client.delete_queue(name)
    with pytest.raises(ArmadaApiError) as missing:
        client.get_queue(name)
    assert missing.value.status == 404


def test_upstream_field_names_round_trip(server: ApiServer) -> None:
    name = fresh_name()
    body = {
        "name": name,
        "priorityFactor": 3,
        "userOwners": ["alice"],
        "groupOwners": ["team"],
        "permissions": [{"subjects": [{"kind": "Group", "name": "team"}], "verbs": ["submit", "cancel"]}],
        "cordoned": False,
        "labels": {"a": "b"},
        "resourceLimitsByPriorityClassName": {"armada-default": {"maximumResourceFraction": {"cpu": 0.5}}},
    }
    assert httpx.post(f"{server.url}/v1/queue", json=body).status_code == 200
    got = httpx.get(f"{server.url}/v1/queue/{name}").json()
    for key in ("name", "priorityFactor", "userOwners", "groupOwners", "permissions", "labels"):
        assert got[key] == body[key]
    limits = got["resourceLimitsByPriorityClassName"]["armada-default"]
    assert limits["maximumResourceFraction"] == {"cpu": 0.5}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"name": "bad name!"}, 400, "name"),
        # Queue names are pod label values: Kubernetes refuses one ending in '-', '.' or '_'.
        ({"name": "team-"}, 400, "name"),
        ({"name": "team."}, 400, "name"),
        ({"name": "team_"}, 400, "name"),
        ({"name": "q" * 64}, 400, "name"),
        ({"name": "ok-name", "priorityFactor": 0}, 400, "priorityFactor"),
        ({"name": "ok-name", "priorityFactor": -1}, 400, "priorityFactor"),
        ({"name": "ok-name", "colour": "red"}, 400, "colour"),
        ({"name": 5}, 400, "name"),
    ],
)
def test_invalid_queues_are_refused(
    server: ApiServer, body: dict[str, object], status: int, field: str
) -> None:
    response = httpx.post(f"{server.url}/v1/queue", json=body)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field


def test_conflicts_and_missing_queues(client: ArmadaClient, queue: str) -> None:
    with pytest.raises(Conflict) as duplicate:
        client.create_queue(Queue(name=queue))
    assert duplicate.value.status == 409 and isinstance(duplicate.value, ArmadaApiError)
    for action in (
        lambda: client.update_queue(Queue(name=fresh_name())),
        lambda: client.delete_queue(fresh_name()),
        lambda: client.cordon_queue(fresh_name()),
    ):
        with pytest.raises(NotFound) as missing:
            action()
        assert missing.value.status == 404


def test_update_must_name_the_same_queue(server: ApiServer, queue: str) -> None:
    response = httpx.put(f"{server.url}/v1/queue/{queue}", json={"name": "other"})
    assert response.status_code == 400
    assert response.json()["field"] == "name"


def test_batched_list_is_ndjson_ending_with_a_marker(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    response = httpx.get(f"{server.url}/v1/batched/queues")
    lines = [msgspec.json.decode(line) for line in response.text.splitlines()]
    assert lines[-1] == {"result": {"Event": {"end": {}}}}
    names = [line["result"]["Event"]["queue"]["name"] for line in lines[:-1]]
    assert queue in names
    assert names == sorted(names)
    assert queue in [q.name for q in client.list_queues()]
    limited = httpx.get(f"{server.url}/v1/batched/queues", params={"num": 1}).text.splitlines()
    assert len(limited) == 2


def test_batched_create_and_update_report_failures(client: ArmadaClient, queue: str) -> None:
    new = fresh_name()
    result = client.create_queues([Queue(name=new), Queue(name=queue), Queue(name="bad name")])
    assert [(f.queue.name, bool(f.error)) for f in result.failed_queues] == [
        (queue, True),
        ("bad name", True),
    ]
    assert client.get_queue(new).name == new
    missing = fresh_name()
    result = client.update_queues([Queue(name=new, priority_factor=5), Queue(name=missing)])
    assert [f.queue.name for f in result.failed_queues] == [missing]
    assert client.get_queue(new).priority_factor == 5


def test_cordoned_queue_refuses_submissions(client: ArmadaClient, queue: str) -> None:
    client.cordon_queue(queue)
    assert client.get_queue(queue).cordoned
    with pytest.raises(ArmadaApiError) as refused:
        client.submit_jobs(queue, "set", [item()])
    assert (refused.value.status, refused.value.field) == (409, "queue")
    client.cordon_queue(queue, False)
    assert not client.get_queue(queue).cordoned
    assert len(client.submit_jobs(queue, "set", [item()])) == 1


def test_queue_with_unfinished_jobs_cannot_be_deleted(client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    with pytest.raises(ArmadaApiError) as refused:
        client.delete_queue(queue)
    assert refused.value.status == 409
    client.cancel_jobs(queue, "set", [job_id])
    client.delete_queue(queue)


def test_active_queues_by_pool(client: ArmadaClient, queue: str) -> None:
    idle = fresh_name()
    client.create_queue(Queue(name=idle))
    client.submit_jobs(queue, "set", [item()])
    active = client.active_queues()
    assert queue in active["default"]
    assert idle not in active["default"]
