"""Lookout's column matches (exact, startsWith, contains, anyOf, exists, greaterThan,
lessThan) over real HTTP on SQLite and PostgreSQL: the same answers on both, the user's
``%`` and ``_`` taken literally, and bad matches refused naming the match."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from armada.client import ArmadaClient
from tests.api.jobs import item, start
from tests.servers import ApiServer


def matching(server: ApiServer, queue: str, *matches: dict[str, Any]) -> set[str]:
    body = {"filter": {"queue": queue, "matches": list(matches)}, "take": 500}
    response = httpx.post(f"{server.url}/api/v1/jobs", json=body)
    assert response.status_code == 200, response.text
    return {job["jobId"] for job in response.json()["jobs"]}


def refusal(server: ApiServer, *matches: dict[str, Any]) -> tuple[int, str]:
    response = httpx.post(f"{server.url}/api/v1/jobs", json={"filter": {"matches": list(matches)}})
    return response.status_code, response.json().get("field", "")


def test_text_number_and_time_matches(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    (nightly,) = client.submit_jobs(queue, "Nightly-Build", [item(priority=1)])
    (percent,) = client.submit_jobs(queue, "50%_done", [item(priority=5)])
    (plain,) = client.submit_jobs(queue, "50xxdone", [item(priority=9)])
    start(server, queue, "Nightly-Build", nightly, cluster="cluster-east", node="node-7")
    everything = {nightly, percent, plain}
    assert matching(server, queue) == everything

    def text(column: str, match: str, value: str = "", values: list[str] | None = None) -> set[str]:
        return matching(
            server, queue, {"column": column, "match": match, "value": value, "values": values or []}
        )

    assert text("jobSet", "exact", "Nightly-Build") == {nightly}
    assert text("jobSet", "exact", "nightly-build") == set()  # exact is exact
    assert text("jobSet", "startsWith", "NIGHTLY") == {nightly}  # searches ignore ASCII case
    assert text("jobSet", "contains", "build") == {nightly}
    assert text("jobSet", "contains", "%_") == {percent}  # literally, not as LIKE wildcards
    assert text("jobSet", "startsWith", "50") == {percent, plain}
    assert text("jobSet", "anyOf", values=["50xxdone", "Nightly-Build", "other"]) == {nightly, plain}
    assert text("cluster", "exists") == {nightly}
    assert text("node", "contains", "DE-7") == {nightly}
    assert text("namespace", "exact", "default") == everything

    assert text("priority", "greaterThan", "1") == {percent, plain}
    assert text("priority", "lessThan", "9") == {nightly, percent}
    assert text("priority", "anyOf", values=["1", "9"]) == {nightly, plain}
    assert text("priority", "exact", "5") == {percent}
    # Several matches: all must hold.
    both = matching(
        server,
        queue,
        {"column": "jobSet", "match": "startsWith", "value": "50"},
        {"column": "priority", "match": "greaterThan", "value": "6"},
    )
    assert both == {plain}

    submitted = {
        job["jobId"]: job["submitted"]
        for job in httpx.post(f"{server.url}/api/v1/jobs", json={"filter": {"queue": queue}}).json()["jobs"]
    }
    assert text("submitted", "lessThan", submitted[nightly]) == set()
    assert nightly not in text("submitted", "greaterThan", submitted[nightly])
    assert text("submitted", "greaterThan", "2000-01-01T00:00:00Z") == everything


@pytest.mark.parametrize(
    ("match", "field"),
    [
        ({"column": "priority", "match": "startsWith", "value": "1"}, "filter.matches[0].match"),
        ({"column": "queue", "match": "greaterThan", "value": "a"}, "filter.matches[0].match"),
        ({"column": "priority", "match": "exact", "value": "high"}, "filter.matches[0].value"),
        ({"column": "priority", "match": "lessThan", "value": "NaN"}, "filter.matches[0].value"),
        ({"column": "gpu", "match": "anyOf", "values": ["1", "x"]}, "filter.matches[0].values"),
        (
            {"column": "submitted", "match": "lessThan", "value": "2026-01-01T00:00:00"},
            "filter.matches[0].value",
        ),
        ({"column": "spec", "match": "exact", "value": "x"}, "filter.matches[0].column"),
    ],
)
def test_bad_matches_are_400_naming_the_match(server: ApiServer, match: dict[str, Any], field: str) -> None:
    assert refusal(server, match) == (400, field)
