"""Lookout's saved views over HTTP (/v1/lookout/views), and the drawer's templates.

Views belong to the signed-in user: another user can neither list, read, replace nor
delete them. Bad input is refused naming the field and changes nothing (not the views, not
the log). A replay of the log (rebuild-views) gives the views back.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import msgspec
import pytest

from armada.eventstore.rebuild import rebuild_views
from armada.lookout.settings import CommandTemplate, LinkTemplate, LookoutSettings
from armada.settings import Settings
from tests.api.accounts import example_settings, http_as
from tests.api.jobs import raw_item, start
from tests.servers import ApiServer

VIEWS = "/v1/lookout/views"
LIMIT = 3
MAX_BYTES = 1024


@pytest.fixture(scope="module")
def settings() -> Settings:
    lookout = LookoutSettings(
        saved_views_per_user=LIMIT,
        saved_view_bytes=MAX_BYTES,
        commands=[
            CommandTemplate(
                name="Describe", template="kubectl -n {{ namespace }} describe pod {{ podName }}"
            ),
            CommandTemplate(name="Tag", template="echo {{ annotations.example.com/tag }} {{ jobSet }}"),
            CommandTemplate(name="Logs", template="kubectl --context {{ cluster }} logs {{ podName }}"),
        ],
        links=[
            LinkTemplate(
                name="Grafana", template="https://grafana.example/d/x?job={{ jobId }}&set={{ jobSet }}"
            )
        ],
    )
    return msgspec.structs.replace(example_settings(), lookout=lookout)


@pytest.fixture
def alice(server: ApiServer) -> Iterator[httpx.Client]:
    with http_as(server, "alice") as client:
        for view in client.get(VIEWS).json()["views"]:  # each test starts with none
            assert client.delete(f"{VIEWS}/{view['name']}").status_code == 200
        yield client


@pytest.fixture
def bob(server: ApiServer) -> Iterator[httpx.Client]:
    with http_as(server, "bob") as client:
        yield client


def names(client: httpx.Client) -> list[str]:
    response = client.get(VIEWS)
    assert response.status_code == 200, response.text
    return [view["name"] for view in response.json()["views"]]


STATE = {
    "query": "queue=q1&state=RUNNING&sort=priority",
    "stored": {"lookout.jobs.columns": '["jobId","queue"]'},
}


def test_save_read_replace_list_delete(alice: httpx.Client) -> None:
    saved = alice.put(f"{VIEWS}/Running jobs", json={"state": STATE})
    assert saved.status_code == 200, saved.text
    assert saved.json()["name"] == "Running jobs" and saved.json()["state"] == STATE
    got = alice.get(f"{VIEWS}/Running%20jobs").json()
    assert got["state"] == STATE and got["updated"] == saved.json()["updated"]
    replaced = {**STATE, "query": "queue=q2"}
    assert alice.put(f"{VIEWS}/Running jobs", json={"state": replaced}).status_code == 200
    assert alice.get(f"{VIEWS}/Running jobs").json()["state"] == replaced
    assert alice.put(f"{VIEWS}/a-first_one.2", json={"state": {}}).status_code == 200
    assert names(alice) == ["Running jobs", "a-first_one.2"]
    assert alice.delete(f"{VIEWS}/Running jobs").status_code == 200
    assert names(alice) == ["a-first_one.2"]
    missing = alice.get(f"{VIEWS}/Running jobs")
    assert missing.status_code == 404 and missing.json()["field"] == "name"
    assert alice.delete(f"{VIEWS}/Running jobs").status_code == 404


def test_one_user_never_sees_or_changes_anothers_views(alice: httpx.Client, bob: httpx.Client) -> None:
    name = f"mine-{uuid.uuid4().hex[:6]}"
    assert alice.put(f"{VIEWS}/{name}", json={"state": STATE}).status_code == 200
    assert name not in names(bob)
    assert bob.get(f"{VIEWS}/{name}").status_code == 404
    assert bob.delete(f"{VIEWS}/{name}").status_code == 404
    # The same name is bob's own view: alice's is untouched, and deleting his leaves hers.
    assert bob.put(f"{VIEWS}/{name}", json={"state": {"query": "bob"}}).status_code == 200
    assert alice.get(f"{VIEWS}/{name}").json()["state"] == STATE
    assert bob.delete(f"{VIEWS}/{name}").status_code == 200
    assert alice.get(f"{VIEWS}/{name}").json()["state"] == STATE
    anonymous = httpx.get(f"{alice.base_url}{VIEWS}")  # the example turns anonymous access off
    assert anonymous.status_code == 401


BAD: list[tuple[str, Any, int, str]] = [
    ("x" * 65, {"state": {}}, 400, "name"),
    (" leading", {"state": {}}, 400, "name"),
    ("trailing.", {"state": {}}, 400, "name"),
    ("semi;colon", {"state": {}}, 400, "name"),
    ("üml", {"state": {}}, 400, "name"),
    ("ok", {"state": {"query": "x" * MAX_BYTES}}, 413, "state"),
    ("ok", {"state": ["not", "an", "object"]}, 400, "state"),
    ("ok", {"state": "text"}, 400, "state"),
    ("ok", {}, 400, "state"),
    ("ok", {"state": {}, "owner": "bob"}, 400, "owner"),
]


@pytest.mark.parametrize(
    ("name", "body", "status", "field"), BAD, ids=[f"{b[3]}-{i}" for i, b in enumerate(BAD)]
)
def test_bad_input_names_the_field_and_changes_nothing(
    server: ApiServer, alice: httpx.Client, name: str, body: Any, status: int, field: str
) -> None:
    assert alice.put(f"{VIEWS}/kept", json={"state": STATE}).status_code == 200
    head = server.head()
    refused = alice.put(f"{VIEWS}/{name}", json=body)
    assert refused.status_code == status, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["field"] == field, refused.text
    assert names(alice) == ["kept"] and alice.get(f"{VIEWS}/kept").json()["state"] == STATE
    assert server.head() == head


def test_a_user_keeps_at_most_the_configured_number_of_views(server: ApiServer, alice: httpx.Client) -> None:
    for i in range(LIMIT):
        assert alice.put(f"{VIEWS}/view {i}", json={"state": {"i": i}}).status_code == 200
    head = server.head()
    refused = alice.put(f"{VIEWS}/one more", json={"state": {}})
    assert refused.status_code == 400 and refused.json()["field"] == "name"
    assert str(LIMIT) in refused.json()["detail"]
    assert server.head() == head and len(names(alice)) == LIMIT
    # Replacing one of them is not one more.
    assert alice.put(f"{VIEWS}/view 0", json={"state": {"i": "again"}}).status_code == 200
    assert alice.get(f"{VIEWS}/view 0").json()["state"] == {"i": "again"}


def test_views_are_rebuilt_from_the_log(server: ApiServer, alice: httpx.Client, bob: httpx.Client) -> None:
    assert alice.put(f"{VIEWS}/survives", json={"state": STATE}).status_code == 200
    assert alice.put(f"{VIEWS}/deleted", json={"state": {}}).status_code == 200
    assert alice.delete(f"{VIEWS}/deleted").status_code == 200
    before = alice.get(VIEWS).json()
    server.run(rebuild_views(server.store))
    assert alice.get(VIEWS).json() == before
    assert "survives" not in names(bob)


def test_the_drawer_fills_in_templates_with_the_jobs_fields_escaped(server: ApiServer) -> None:
    queue = f"tpl-{uuid.uuid4().hex[:6]}"
    hostile_set = "set $(touch pwned) 'x'"
    tag = "javascript:alert(1) && `id`"
    with http_as(server, "admin") as admin:
        spec = {"name": queue, "groupOwners": ["team-a"], "priorityFactor": 1}
        assert admin.post("/v1/queue", json=spec).status_code == 200
        item = raw_item(annotations={"example.com/tag": tag})
        submitted = admin.post(
            "/v1/job/submit", json={"queue": queue, "jobSetId": hostile_set, "jobRequestItems": [item]}
        )
        assert submitted.status_code == 200, submitted.text
        job_id = submitted.json()["jobResponseItems"][0]["jobId"]

        detail = admin.get(f"/api/v1/jobs/{job_id}").json()
        commands = {command["name"]: command["command"] for command in detail["commands"]}
        assert "Logs" not in commands  # it names the cluster: not until the job has run
        assert shlex.split(commands["Describe"]) == [
            "kubectl",
            "-n",
            "default",
            "describe",
            "pod",
            f"armada-{job_id.lower()}-0",
        ]
        assert shlex.split(commands["Tag"]) == ["echo", tag, hostile_set]
        [link] = detail["links"]
        parts = urlsplit(link["href"])
        assert (parts.scheme, parts.netloc, parts.path) == ("https", "grafana.example", "/d/x")
        assert [unquote(pair.split("=", 1)[1]) for pair in parts.query.split("&")] == [job_id, hostile_set]

        start(server, queue, hostile_set, job_id, cluster="cluster $(x)")
        commands = {c["name"]: c["command"] for c in admin.get(f"/api/v1/jobs/{job_id}").json()["commands"]}
        assert shlex.split(commands["Logs"])[:3] == ["kubectl", "--context", "cluster $(x)"]
