"""Lookout's nested grouping (``POST /api/v1/groupJobs``) over real HTTP on SQLite and
PostgreSQL: each group's count and summed requests are those of the jobs the table lists
inside it, filters hold inside groups, a caller sees only the queues it may watch, and bad
groupings are refused naming the field."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from armada.lookout.wire import MAX_GROUP_LEVELS
from armada.model.queues import Queue
from armada.settings import Settings
from tests.api.accounts import as_user, example_settings, http_as
from tests.api.jobs import item, pod_spec, start
from tests.servers import ApiServer


@pytest.fixture(scope="module")
def settings() -> Settings:
    return example_settings()


def team_queue(server: ApiServer, team: str) -> str:
    queue = f"g-{uuid.uuid4().hex[:8]}"
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=queue, group_owners=[team]))
    return queue


def post(http: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = http.post(path, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def groups(http: httpx.Client, job_filter: dict[str, Any], column: str, **more: Any) -> list[dict[str, Any]]:
    key = (
        {"column": "annotation", "annotation": column[len("annotation:") :]}
        if ":" in column
        else {"column": column}
    )
    found: list[dict[str, Any]] = post(
        http, "/api/v1/groupJobs", {"filter": job_filter, "groupBy": key, **more}
    )["groups"]
    return found


def jobs_in(http: httpx.Client, job_filter: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = post(http, "/api/v1/jobs", {"filter": job_filter, "take": 500})["jobs"]
    return found


def totals(rows: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    return (
        len(rows),
        sum(r["cpuMillis"] for r in rows),
        sum(r["memoryBytes"] for r in rows),
        sum(r["gpu"] for r in rows),
    )


def agree(http: httpx.Client, job_filter: dict[str, Any], columns: list[str]) -> int:
    """Walk every group down ``columns`` (nested), checking each against the jobs inside it;
    returns how many groups were checked."""
    if not columns:
        return 0
    checked = 0
    column, *deeper = columns
    for group in groups(http, job_filter, column):
        key: dict[str, Any] = (
            {"column": "annotation", "annotation": column[len("annotation:") :]}
            if ":" in column
            else {"column": column}
        )
        inside = {**job_filter, "within": [*job_filter.get("within", []), {**key, "value": group["value"]}]}
        aggregates = (group["count"], group["cpuMillis"], group["memoryBytes"], group["gpu"])
        assert aggregates == totals(jobs_in(http, inside)), (column, group)
        checked += 1 + agree(http, inside, deeper)
    return checked


@pytest.fixture(scope="module")
def alices(server: ApiServer) -> str:
    """A team-a queue: six jobs in two job sets, of two sizes, some annotated, two running."""
    queue = team_queue(server, "team-a")
    with as_user(server, "alice") as alice:
        small = [
            item(pod_spec=pod_spec(cpu="250m", memory="32Mi"), annotations={"team": "vision"})
            for _ in range(3)
        ]
        big = [item(pod_spec=pod_spec(cpu="2", memory="1Gi")), item(pod_spec=pod_spec(cpu="2", memory="1Gi"))]
        train = alice.submit_jobs(queue, "train", [*small, *big[:1]])
        evaluate = alice.submit_jobs(queue, "eval", [*big[1:], item(annotations={"team": "speech"})])
        alice.cancel_jobs(queue, "eval", evaluate[:1])
    start(server, queue, "train", train[0], node="node-a")
    start(server, queue, "train", train[3], node="node-b")
    return queue


def test_group_counts_and_resources_agree_with_the_jobs(server: ApiServer, alices: str) -> None:
    with http_as(server, "alice") as http:
        mine = {"queue": alices}
        by_set = groups(http, mine, "jobSet")
        assert [(g["value"], g["count"], g["cpuMillis"], g["memoryBytes"]) for g in by_set] == [
            ("train", 4, 2750, 3 * 32 * 2**20 + 2**30),
            ("eval", 2, 3000, 2**30 + 64 * 2**20),
        ]
        # Jobs without a value form the "" group, which names them again inside it.
        by_team = {g["value"]: g["count"] for g in groups(http, mine, "annotation:team")}
        assert by_team == {"vision": 3, "speech": 1, "": 2}
        assert {g["value"]: g["count"] for g in groups(http, mine, "pool")} == {"gpu": 2, "": 4}
        assert {g["value"]: g["count"] for g in groups(http, mine, "node")} == {
            "node-a": 1,
            "node-b": 1,
            "": 4,
        }
        # Every level of several nestings, against the table's own rows.
        assert agree(http, mine, ["jobSet", "state"]) == 2 + 4
        assert agree(http, mine, ["state", "annotation:team", "node"]) > 6
        assert agree(http, mine, ["pool", "jobSet", "owner", "cluster"]) > 6


def test_filters_hold_inside_groups(server: ApiServer, alices: str) -> None:
    with http_as(server, "alice") as http:
        running = {"queue": alices, "states": ["RUNNING"]}
        assert [(g["value"], g["count"], g["cpuMillis"]) for g in groups(http, running, "jobSet")] == [
            ("train", 2, 2250)
        ]
        big = {"queue": alices, "matches": [{"column": "cpuMillis", "match": "greaterThan", "value": "1500"}]}
        assert {g["value"]: g["count"] for g in groups(http, big, "jobSet")} == {"train": 1, "eval": 1}
        assert agree(http, big, ["state", "jobSet"]) == 4
        team = {"queue": alices, "annotations": {"team": "vision"}}
        assert {g["value"]: g["count"] for g in groups(http, team, "state")} == {"QUEUED": 2, "RUNNING": 1}


def test_order_and_pages_of_groups(server: ApiServer, alices: str) -> None:
    with http_as(server, "alice") as http:
        mine = {"queue": alices}
        by_cpu = groups(http, mine, "jobSet", order={"field": "cpuMillis", "direction": "desc"})
        assert [g["value"] for g in by_cpu] == ["eval", "train"]
        by_name = groups(http, mine, "state", order={"field": "value", "direction": "asc"})
        assert [g["value"] for g in by_name] == ["CANCELLED", "QUEUED", "RUNNING"]
        first = post(http, "/api/v1/groupJobs", {"filter": mine, "groupBy": {"column": "state"}, "take": 2})
        rest = post(http, "/api/v1/groupJobs", {"filter": mine, "groupBy": {"column": "state"}, "skip": 2})
        assert (len(first["groups"]), first["hasMore"], len(rest["groups"]), rest["hasMore"]) == (
            2,
            True,
            1,
            False,
        )


def test_groups_show_only_queues_the_caller_may_watch(server: ApiServer, alices: str) -> None:
    bobs = team_queue(server, "team-b")
    with as_user(server, "bob") as bob:
        bob.submit_jobs(bobs, "set", [item()])
    with http_as(server, "bob") as http:
        assert [g["value"] for g in groups(http, {}, "queue")] == [bobs]
        assert groups(http, {"queue": alices}, "jobSet") == []
        within = {"within": [{"column": "queue", "value": alices}]}
        assert groups(http, within, "state") == [] and jobs_in(http, within) == []
    with http_as(server, "alice") as http:
        assert bobs not in {g["value"] for g in groups(http, {}, "queue")}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"groupBy": {"column": "colour"}}, "groupBy.column"),
        ({"groupBy": {}}, "groupBy.column"),  # a missing required field is named
        ({"groupBy": {"column": "annotation"}}, "groupBy.annotation"),
        ({"groupBy": {"column": "queue", "annotation": "team"}}, "groupBy.annotation"),
        ({"groupBy": {"column": "annotation", "annotation": 'a"b'}}, "groupBy.annotation"),
        (
            {"groupBy": {"column": "queue"}, "filter": {"within": [{"column": "queue", "value": "q"}]}},
            "groupBy.column",
        ),
        (
            {
                "groupBy": {"column": "node"},
                "filter": {"within": [{"column": "state", "value": "x", "colour": 1}]},
            },
            "filter.within[0].colour",
        ),
        (
            {
                "groupBy": {"column": "node"},
                "filter": {
                    "within": [
                        {"column": "annotation", "annotation": f"k{i}"} for i in range(MAX_GROUP_LEVELS)
                    ]
                },
            },
            "filter.within",
        ),
        (
            {
                "groupBy": {"column": "node"},
                "filter": {
                    "within": [
                        {"column": "annotation", "annotation": f"k{i}"} for i in range(MAX_GROUP_LEVELS + 1)
                    ]
                },
            },
            "filter.within",
        ),
        ({"groupBy": {"column": "node"}, "order": {"field": "colour"}}, "order.field"),
    ],
)
def test_bad_groupings_are_400_naming_the_field(server: ApiServer, body: dict[str, Any], field: str) -> None:
    with http_as(server, "alice") as http:
        response = http.post("/api/v1/groupJobs", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
