"""Transport limits and browser access: 413 for oversized bodies, CORS for the UI's origin."""

from __future__ import annotations

import base64

import httpx
import msgspec
import pytest

from armada.settings import Settings, load_settings
from tests.databases import SQLITE_ONLY
from tests.processes import ROOT
from tests.servers import ApiServer

UI = "https://ui.example.com"
ADMIN = {"Authorization": "Basic " + base64.b64encode(b"admin:admin-pass").decode()}


pytestmark = SQLITE_ONLY


@pytest.fixture(scope="module")
def settings() -> Settings:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    server_settings = msgspec.structs.replace(
        settings.server, max_request_bytes=64 * 1024, cors_allow_origins=[UI]
    )
    return msgspec.structs.replace(settings, server=server_settings)


@pytest.mark.parametrize("headers", [ADMIN, {}], ids=["authorised", "anonymous"])
def test_oversized_body_is_413_problem(server: ApiServer, headers: dict[str, str]) -> None:
    body = b'{"queue": "q", "jobSetId": "s", "jobRequestItems": [' + b" " * (100 * 1024) + b"]}"
    response = httpx.post(
        f"{server.url}/v1/job/submit", content=body, headers={**headers, "content-type": "application/json"}
    )
    # Without credentials the caller is refused before the body is read.
    assert response.status_code == (413 if headers else 401)
    assert response.headers["content-type"].startswith("application/problem+json")


def test_cors_preflight_needs_no_credentials_and_names_the_ui(server: ApiServer) -> None:
    preflight = httpx.options(
        f"{server.url}/v1/job/submit",
        headers={
            "Origin": UI,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code in (200, 204)
    assert preflight.headers["access-control-allow-origin"] == UI
    response = httpx.get(f"{server.url}/v1/batched/queues", headers={**ADMIN, "Origin": UI})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == UI


def test_cors_refuses_other_origins(server: ApiServer) -> None:
    response = httpx.get(f"{server.url}/v1/batched/queues", headers={**ADMIN, "Origin": "https://evil.test"})
    assert "access-control-allow-origin" not in response.headers


def test_plain_options_lists_methods_without_credentials(server: ApiServer) -> None:
    response = httpx.options(f"{server.url}/v1/queue/some-queue")
    assert response.status_code == 204
    assert "OPTIONS" in response.headers["allow"]
