"""Queue ownership in practice: owners act on their jobs, others cannot, even by naming
another queue or none; the creator owns a new queue; jobs are owned by their submitter."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from armada.client import ArmadaApiError, ArmadaClient
from armada.client.config import ClientConfig
from armada.model.events import JobSubmitted
from armada.model.queues import Queue
from armada.settings import load_settings
from tests.api.jobs import item
from tests.databases import sqlite_url
from tests.processes import ROOT
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    with serving(sqlite_url(tmp_path_factory.mktemp("owners")), settings) as running:
        yield running


def as_user(server: ApiServer, user: str) -> ArmadaClient:
    return ArmadaClient(ClientConfig(armada_url=server.url, username=user, password=f"{user}-pass"))


@pytest.fixture(scope="module")
def queues(server: ApiServer) -> tuple[str, str]:
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name="team-a", group_owners=["team-a"]))
        admin.create_queue(Queue(name="team-b", group_owners=["team-b"]))
    return "team-a", "team-b"


@contextmanager
def refused(status: int) -> Iterator[None]:
    with pytest.raises(ArmadaApiError, match="may not") as caught:
        yield
    assert caught.value.status == status


def test_others_cannot_touch_a_queues_jobs_by_any_route(server: ApiServer, queues: tuple[str, str]) -> None:
    team_a, team_b = queues
    with as_user(server, "alice") as alice, as_user(server, "bob") as bob:
        (job_id,) = alice.submit_jobs(team_a, "set-1", [item()])
        with refused(403):
            bob.submit_jobs(team_a, "set-1", [item()])
        with refused(403):
            bob.cancel_jobs(team_a, "set-1", [job_id])
        with refused(403):
            bob.cancel_jobs("", "", [job_id])  # naming no queue needs cancel_any_jobs
        # Naming a queue bob owns only ever reaches that queue's jobs.
        assert bob.cancel_jobs(team_b, "", [job_id]) == []
        assert bob.reprioritize_jobs(team_b, "", [job_id], 5) == {job_id: "job not found"}
        with refused(403):
            list(bob.job_set_events(team_a, "set-1"))
        assert alice.job_status([job_id]) == {job_id: "QUEUED"}
        assert alice.cancel_jobs(team_a, "set-1", [job_id]) == [job_id]


def test_jobs_are_owned_by_their_submitter(server: ApiServer, queues: tuple[str, str]) -> None:
    team_a, _ = queues
    with as_user(server, "alice") as alice:
        (job_id,) = alice.submit_jobs(team_a, "owned", [item()])
        (submitted, *_) = list(alice.job_set_events(team_a, "owned"))
        assert isinstance(submitted.event, JobSubmitted)
        assert (submitted.event.job_id, submitted.event.job.owner) == (job_id, "alice")


def test_the_creator_owns_a_new_queue_without_owners(server: ApiServer) -> None:
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name="admins-own"))
        assert admin.get_queue("admins-own").user_owners == ["admin"]
        admin.create_queue(Queue(name="given-owners", group_owners=["team-b"]))
        assert admin.get_queue("given-owners").user_owners == []


def test_queue_administration_needs_global_permissions(server: ApiServer, queues: tuple[str, str]) -> None:
    team_a, _ = queues
    with as_user(server, "alice") as alice:
        with refused(403):
            alice.create_queue(Queue(name="alices"))
        with refused(403):
            alice.cordon_queue(team_a)
        with refused(403):
            alice.delete_queue(team_a)
        assert alice.get_queue(team_a).group_owners == ["team-a"]
