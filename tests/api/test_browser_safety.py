"""CSRF: another site's page cannot make a signed-in browser change anything, and the UI's
responses carry the headers that keep it from being framed or sniffed. Over real HTTP."""

from __future__ import annotations

import uuid

import httpx
import pytest

from armada.client import ArmadaClient
from armada.settings import load_settings
from tests.databases import sqlite_url
from tests.processes import ROOT
from tests.servers import ApiServer, serving

SUBMIT = b'{"queue": "nope", "jobSetId": "s", "jobRequestItems": []}'


def _problem(response: httpx.Response, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_a_body_that_is_not_json_is_refused_with_415(server: ApiServer, content_type: str) -> None:
    response = httpx.post(
        f"{server.url}/v1/job/submit", content=SUBMIT, headers={"Content-Type": content_type}
    )
    _problem(response, 415, "Content-Type")
    assert content_type in response.json()["detail"]


def test_a_body_without_a_content_type_is_refused(server: ApiServer) -> None:
    request = httpx.Request("POST", f"{server.url}/v1/queue", content=b'{"name": "x"}')
    assert "content-type" not in request.headers
    with httpx.Client() as http:
        _problem(http.send(request), 415, "Content-Type")


def test_cross_site_requests_are_refused_before_anything_else(server: ApiServer, queue: str) -> None:
    url = f"{server.url}/v1/queue/{queue}"
    cross_site = {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
    _problem(httpx.delete(url, headers=cross_site), 403, "Sec-Fetch-Site")
    _problem(httpx.delete(url, headers={"Origin": "https://evil.example"}), 403, "Origin")
    _problem(httpx.delete(url, headers={"Origin": "null"}), 403, "Origin")
    # Refused before the body is even decoded, and before authentication (see below).
    form = {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
    _problem(httpx.post(f"{server.url}/v1/job/submit", content=b"{", headers=form), 403, "Sec-Fetch-Site")
    with ArmadaClient(server.url) as armada:
        assert armada.get_queue(queue).name == queue  # still there


def test_the_servers_own_pages_and_clients_without_origin_pass(server: ApiServer) -> None:
    name = f"q-{uuid.uuid4().hex[:12]}"
    own = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    assert httpx.post(f"{server.url}/v1/queue", json={"name": name}, headers=own).status_code == 200
    # Reads are not state changes: a cross-site GET is answered (CORS keeps its body from the page).
    assert (
        httpx.get(f"{server.url}/v1/queue/{name}", headers={"Sec-Fetch-Site": "cross-site"}).status_code
        == 200
    )
    assert httpx.delete(f"{server.url}/v1/queue/{name}").status_code == 200  # no body, no Origin: the CLI


def test_pages_carry_security_headers(server: ApiServer) -> None:
    for path in ("/", "/jobs", "/static/js/app.js", "/v1/batched/queues"):
        headers = httpx.get(f"{server.url}{path}").headers
        assert headers["x-frame-options"] == "DENY", path
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["referrer-policy"] == "same-origin", path
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
    refused = httpx.post(f"{server.url}/v1/queue", content=b"x", headers={"Content-Type": "text/plain"})
    assert refused.headers["x-frame-options"] == "DENY"


def test_refusal_comes_before_authentication(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A cross-site request is refused as such (403), without asking for credentials (401)."""
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    with (
        serving(sqlite_url(tmp_path_factory.mktemp("csrf")), settings) as secured,
        httpx.Client(base_url=secured.url, auth=("admin", "admin-pass")) as admin,
    ):
        assert admin.post("/v1/queue", json={"name": "t"}).status_code == 200
        headers = {"Sec-Fetch-Site": "cross-site"}
        _problem(httpx.delete(f"{secured.url}/v1/queue/t", headers=headers), 403, "Sec-Fetch-Site")
        # Even with the browser's remembered credentials.
        _problem(admin.delete("/v1/queue/t", headers=headers), 403, "Sec-Fetch-Site")
        assert admin.get("/v1/queue/t").status_code == 200
