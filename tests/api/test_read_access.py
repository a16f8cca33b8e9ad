"""Reads are for the queue's watchers: bob (team-b) cannot read alice's (team-a) jobs by
any read route, and what he gets is exactly what a job that never existed gives.

The server runs ``examples/config/auth-basic.yaml`` (team-b may also read reports, so
that the reports' own filtering is what refuses him) on SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid

import msgspec
import pytest

from armada.client import ArmadaApiError
from armada.model.queues import Queue
from armada.settings import Settings
from tests.api.accounts import as_user, example_settings, http_as
from tests.api.jobs import item, start
from tests.databases import sqlite_url
from tests.servers import ApiServer, serving

NEVER_SUBMITTED = "01hzzzzzzzzzzzzzzzzzzzzzzz"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return example_settings()


class Alices(msgspec.Struct, frozen=True):
    queue: str
    job_id: str
    run_id: str


@pytest.fixture(scope="module")
def alices(server: ApiServer) -> Alices:
    """A team-a queue (bob's team-b has no grant on it) with one running job of alice's."""
    queue = f"a-{uuid.uuid4().hex[:8]}"
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=queue, group_owners=["team-a"]))
    with as_user(server, "alice") as alice:
        (job_id,) = alice.submit_jobs(queue, "set-1", [item()])
    return Alices(queue, job_id, start(server, queue, "set-1", job_id))


def test_bob_reads_alices_jobs_as_if_they_did_not_exist(server: ApiServer, alices: Alices) -> None:
    job, run = alices.job_id, alices.run_id
    with as_user(server, "bob") as bob:
        assert bob.job_status([job, NEVER_SUBMITTED]) == {job: "UNKNOWN", NEVER_SUBMITTED: "UNKNOWN"}
        assert bob.job_details([job], expand_spec=True, expand_runs=True) == {}
        assert bob.job_errors([job]) == {}
        assert bob.run_details([run]) == {}
        with pytest.raises(ArmadaApiError) as missing:
            bob.job_report(NEVER_SUBMITTED)
        with pytest.raises(ArmadaApiError) as hidden:
            bob.job_report(job)
        assert (hidden.value.status, hidden.value.field) == (missing.value.status, missing.value.field)
        assert (hidden.value.status, hidden.value.field) == (404, "jobId")
        assert hidden.value.detail == missing.value.detail.replace(NEVER_SUBMITTED, job)
        with pytest.raises(ArmadaApiError) as refused:
            bob.queue_report(alices.queue)
        assert refused.value.status == 403
        assert alices.queue not in bob.active_queues().get("default", [])
    with as_user(server, "alice") as alice:
        assert alice.job_status([job]) == {job: "RUNNING"}
        assert set(alice.job_details([job])) == {job}
        assert set(alice.run_details([run])) == {run}
    with as_user(server, "admin") as admin:  # reports need view_reports: alice has not got it
        assert admin.job_report(job).job_id == job


def test_bob_reads_alices_forecasts_as_unknown(server: ApiServer, alices: Alices) -> None:
    queue = f"a-{uuid.uuid4().hex[:8]}"  # not alice's fixture queue: other tests count its jobs
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=queue, group_owners=["team-a"]))
    with as_user(server, "alice") as alice:
        (queued,) = alice.submit_jobs(queue, "set-1", [item()])
    server.run(server.app.state.services.forecasts.refresh())
    with as_user(server, "bob") as bob:
        hidden = bob.job_forecast([queued, alices.job_id, NEVER_SUBMITTED])
    assert hidden[queued] == hidden[alices.job_id] == hidden[NEVER_SUBMITTED]
    assert hidden[queued].outcome == "UNKNOWN"
    with as_user(server, "bob") as bob:
        assert queue not in bob.scheduling_report().new_jobs
    with as_user(server, "admin") as admin:
        assert queue in admin.scheduling_report().new_jobs  # its typical shape, forecast without nodes
    with as_user(server, "alice") as alice:
        mine = alice.job_forecast([queued, alices.job_id])
    assert (mine[queued].outcome, mine[alices.job_id].outcome) == ("NOT_WITHIN_HORIZON", "STARTED")


def test_bob_sees_alices_queue_but_not_who_owns_it(server: ApiServer, alices: Alices) -> None:
    with as_user(server, "bob") as bob:
        shown = bob.get_queue(alices.queue)
        assert (shown.name, shown.group_owners, shown.user_owners, shown.permissions) == (
            alices.queue,
            [],
            [],
            [],
        )
        listed = {queue.name: queue for queue in bob.list_queues()}
        assert listed[alices.queue].group_owners == []
    with as_user(server, "alice") as alice:
        assert alice.get_queue(alices.queue).group_owners == ["team-a"]


def test_lookout_shows_bob_none_of_alices_jobs(server: ApiServer, alices: Alices) -> None:
    with http_as(server, "bob") as bob, http_as(server, "alice") as alice:
        missing = bob.get(f"/api/v1/jobs/{NEVER_SUBMITTED}")
        hidden = bob.get(f"/api/v1/jobs/{alices.job_id}")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["detail"] == missing.json()["detail"].replace(NEVER_SUBMITTED, alices.job_id)
        by_queue = {"filter": {"queue": alices.queue}}
        assert bob.post("/api/v1/jobs", json=by_queue).json()["jobs"] == []
        assert bob.post("/api/v1/jobCount", json=by_queue).json()["count"] == 0
        assert alices.queue not in {
            g["name"] for g in bob.post("/api/v1/jobGroups", json={}).json()["groups"]
        }
        assert alices.queue not in {q["name"] for q in bob.get("/api/v1/overview").json()["queues"]}
        assert alice.get(f"/api/v1/jobs/{alices.job_id}").status_code == 200
        assert [j["jobId"] for j in alice.post("/api/v1/jobs", json=by_queue).json()["jobs"]] == [
            alices.job_id
        ]


def test_a_stream_on_a_queue_that_does_not_exist_yet_is_not_found(server: ApiServer) -> None:
    """Otherwise bob could wait on it and receive the events of whoever creates it."""
    future = f"future-{uuid.uuid4().hex[:8]}"
    with http_as(server, "bob") as bob:
        response = bob.post(f"/v1/job-set/{future}/set-1", json={"watch": True})
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["field"] == "queue"
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=future, group_owners=["team-a"]))
    with http_as(server, "bob") as bob:
        assert bob.post(f"/v1/job-set/{future}/set-1", json={}).status_code == 403


def test_open_lookout_lets_every_caller_browse_lookout_but_nothing_else(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with serving(sqlite_url(tmp_path_factory.mktemp("open")), example_settings(open_lookout=True)) as server:
        queue = "team-a"
        with as_user(server, "admin") as admin:
            admin.create_queue(Queue(name=queue, group_owners=["team-a"]))
        with as_user(server, "alice") as alice:
            (job_id,) = alice.submit_jobs(queue, "set-1", [item()])
        with http_as(server, "bob") as bob:
            assert bob.get(f"/api/v1/jobs/{job_id}").status_code == 200
            assert (
                bob.post("/v1/job/status", json={"jobIds": [job_id]}).json()["jobStates"][job_id] == "UNKNOWN"
            )
