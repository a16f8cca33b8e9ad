"""Abuse limits over real HTTP: failed logins, job-id lists, Lookout paging, open streams,
queued jobs per queue (issue #15)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import msgspec
import pytest

from armada.api.settings import ServerSettings
from armada.client import ArmadaClient
from armada.lookout.wire import MAX_SKIP
from armada.model.queues import Queue
from armada.model.wire.base import MAX_IDS_PER_REQUEST
from armada.services.settings import SubmissionSettings
from armada.settings import Settings, load_settings
from tests.api.jobs import item, raw_item
from tests.databases import DATABASE_KINDS, database_url_for, sqlite_url
from tests.processes import ROOT
from tests.servers import ApiServer, serving

EXAMPLE = ROOT / "examples" / "config" / "auth-basic.yaml"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    settings = load_settings(EXAMPLE, env={})
    auth = msgspec.structs.replace(settings.auth, failed_login_limit=3, failed_login_window_seconds=30)
    with serving(
        sqlite_url(tmp_path_factory.mktemp("abuse")), msgspec.structs.replace(settings, auth=auth)
    ) as srv:
        yield srv


def test_failed_logins_are_rate_limited_with_retry_after(secured: ApiServer) -> None:
    url = f"{secured.url}/v1/batched/queues"
    for _ in range(3):
        assert httpx.get(url, auth=("bob", "guess"), timeout=30).status_code == 401
    throttled = httpx.get(url, auth=("bob", "bob-pass"), timeout=30)  # even the right password, for now
    assert throttled.status_code == 429
    assert throttled.headers["content-type"].startswith("application/problem+json")
    assert 1 <= int(throttled.headers["retry-after"]) <= 30
    assert throttled.json()["status"] == 429 and "failed logins" in throttled.json()["detail"]


TOO_MANY = [f"{i:026d}" for i in range(MAX_IDS_PER_REQUEST + 1)]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/job/status", {"jobIds": TOO_MANY}, "jobIds"),
        ("/v1/job/details", {"jobIds": TOO_MANY}, "jobIds"),
        ("/v1/job/errors", {"jobIds": TOO_MANY}, "jobIds"),
        ("/v1/run/details", {"runIds": TOO_MANY}, "runIds"),
        ("/v1/job/cancel", {"queue": "QUEUE", "jobIds": TOO_MANY}, "jobIds"),
        ("/v1/job/preempt", {"queue": "QUEUE", "jobIds": TOO_MANY}, "jobIds"),
        ("/v1/job/reprioritize", {"queue": "QUEUE", "jobIds": TOO_MANY, "newPriority": 1}, "jobIds"),
    ],
)
def test_job_id_lists_are_capped(
    server: ApiServer, queue: str, path: str, body: dict[str, object], field: str
) -> None:
    head = server.head()
    if "queue" in body:
        body = {**body, "queue": queue}
    response = httpx.post(server.url + path, json=body, timeout=60)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert str(MAX_IDS_PER_REQUEST) in response.json()["detail"]
    assert server.head() == head
    at_the_cap = {**body, field: TOO_MANY[:MAX_IDS_PER_REQUEST]}
    assert httpx.post(server.url + path, json=at_the_cap, timeout=60).status_code == 200


def test_lookout_pages_cannot_skip_arbitrarily_deep(server: ApiServer) -> None:
    response = httpx.post(f"{server.url}/api/v1/jobs", json={"skip": MAX_SKIP + 1}, timeout=30)
    assert response.status_code == 400 and response.json()["field"] == "skip"
    assert httpx.post(f"{server.url}/api/v1/jobs", json={"skip": MAX_SKIP}, timeout=30).status_code == 200


@pytest.mark.parametrize("key", ['a"b', "a\\b"])
def test_an_annotation_filter_key_with_a_quote_is_a_400(server: ApiServer, key: str) -> None:
    for path in ("/api/v1/jobs", "/api/v1/jobCount", "/api/v1/jobGroups"):
        response = httpx.post(f"{server.url}{path}", json={"filter": {"annotations": {key: "x"}}}, timeout=30)
        assert response.status_code == 400, (path, response.text)
        assert response.json()["field"] == "filter.annotations"


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def capped(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    settings = Settings(
        server=ServerSettings(max_streams_per_caller=2),
        submission=SubmissionSettings(max_queued_jobs_per_queue=3),
    )
    with (
        database_url_for(request.param, tmp_path_factory.mktemp("capped")) as url,
        serving(url, settings) as srv,
    ):
        yield srv


def test_queued_jobs_per_queue_are_capped(capped: ApiServer) -> None:
    with ArmadaClient(capped.url) as client:
        client.create_queue(Queue(name="full"))
        client.submit_jobs("full", "s", [item(), item()])
        head = capped.head()
        body = {"queue": "full", "jobSetId": "s", "jobRequestItems": [raw_item(), raw_item()]}
        refused = httpx.post(f"{capped.url}/v1/job/submit", json=body, timeout=30)
        assert refused.status_code == 429, refused.text
        assert refused.json()["field"] == "jobRequestItems"
        assert "maxQueuedJobsPerQueue" in refused.json()["detail"]
        assert capped.head() == head  # nothing written
        client.submit_jobs("full", "s", [item()])  # exactly at the cap


def test_open_streams_per_caller_are_capped(capped: ApiServer) -> None:
    with ArmadaClient(capped.url) as client:
        client.create_queue(Queue(name="watched"))
    url = f"{capped.url}/v1/job-set/watched/s"
    with httpx.Client(timeout=30) as http, ExitStack() as streams:
        for _ in range(2):
            assert streams.enter_context(http.stream("POST", url, json={"watch": True})).status_code == 200
        refused = http.post(url, json={"watch": True})
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) > 0
        assert refused.headers["content-type"].startswith("application/problem+json")
        lookout = http.get(f"{capped.url}/api/v1/changes")  # the change feed counts too
        assert lookout.status_code == 429
    # Closed streams give their slots back.
    deadline = time.monotonic() + 20
    while True:
        with httpx.Client(timeout=30) as http, http.stream("POST", url, json={"watch": True}) as again:
            if again.status_code == 200:
                break
        assert time.monotonic() < deadline, "closed streams never gave their slots back"
        time.sleep(0.2)
