"""The hostile-input guard runs before the access guard, which looks queues up by name: a
NUL in a queue name is a 400 on both databases, never a 500 from PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from armada.settings import load_settings
from tests.databases import DATABASE_KINDS, database_url_for
from tests.processes import ROOT
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    with (
        database_url_for(request.param, tmp_path_factory.mktemp("guards")) as url,
        serving(url, settings) as srv,
    ):
        yield srv


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/job/submit", {"queue": "a\u0000b", "jobSetId": "s", "jobRequestItems": []}),
        ("POST", "/v1/job/cancel", {"queue": "a\u0000b", "jobIds": ["x"]}),
        ("POST", "/v1/job-set/a%00b/s", {}),
        ("PUT", "/v1/queue/a%00b", {"name": "a"}),
    ],
)
def test_a_nul_in_a_queue_name_is_a_400_before_any_permission_lookup(
    secured: ApiServer, method: str, path: str, body: dict[str, object]
) -> None:
    response = httpx.request(method, secured.url + path, json=body, auth=("alice", "alice-pass"), timeout=30)
    assert response.status_code == 400, response.text
    assert "NUL" in response.json()["detail"]
