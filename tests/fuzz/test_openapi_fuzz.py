"""Fuzz the whole REST API from its own OpenAPI document with schemathesis.

Every generated request, valid or not, must get an answer below 500; every 4xx must be an
RFC 9457 problem; and a rejected request must leave the event log (hence every view)
exactly as it was. Bounded for CI: ``ARMADA_FUZZ_EXAMPLES`` per operation (default 60,
about 2,000 requests in all); raise it to fuzz harder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from tests.databases import PG_ADMIN_URL, database_url_for
from tests.servers import ApiServer, serving

EXAMPLES = int(os.environ.get("ARMADA_FUZZ_EXAMPLES", "60"))


@pytest.fixture(scope="module")
def fuzzed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """PostgreSQL when available (the stricter database), else SQLite."""
    kind = "postgres" if PG_ADMIN_URL else "sqlite"
    with database_url_for(kind, Path(tmp_path_factory.mktemp("fuzz"))) as url, serving(url) as server:
        yield server


def check(case: schemathesis.Case, server: ApiServer) -> None:
    """Send one generated request and hold the answer to the rules above."""
    if isinstance(case.body, dict) and case.body.get("watch"):
        case.body["watch"] = False  # a watched stream never ends by itself
    head = server.head()
    response = case.call(base_url=server.url, timeout=30)
    request = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"[:2000]
    assert response.status_code < 500, f"{request}\n-> {response.status_code} {response.text}"
    if 400 <= response.status_code < 500:
        content_type = {k.lower(): v for k, v in response.headers.items()}.get("content-type", [""])
        assert content_type[0].startswith("application/problem+json"), f"{request}\n-> {response.text}"
        assert server.head() == head, f"a rejected request changed the log: {request}"


@pytest.mark.slow
def test_no_request_breaks_the_server_or_half_writes(fuzzed_server: ApiServer) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzzed_server.url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,  # the same requests on every run: CI failures reproduce
            database=None,
            phases=[Phase.explicit, Phase.generate],  # no shrinking: the message names the request
        )
        def fuzz(case: schemathesis.Case) -> None:
            check(case, fuzzed_server)

        fuzz()
