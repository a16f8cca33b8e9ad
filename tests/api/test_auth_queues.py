"""Queue ownership in practice: owners act on their jobs, others cannot, even by naming
another queue or none; the creator owns a new queue; jobs are owned by their submitter;
owners change only their queue's labels (REST and gRPC, on both databases)."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from queue import SimpleQueue

import grpc
import httpx
import msgspec
import pytest
from armada_client.armada import event_pb2, event_pb2_grpc, submit_pb2, submit_pb2_grpc

from armada.auth.permissions import GlobalPermission as P
from armada.auth.secrets import hash_password
from armada.auth.settings import BasicUser
from armada.client import ArmadaApiError
from armada.model.events import JobSubmitted
from armada.model.queues import Queue
from armada.settings import Settings, load_settings
from tests.api.accounts import as_user
from tests.api.jobs import item
from tests.databases import sqlite_url
from tests.processes import ROOT, free_port
from tests.servers import ApiServer, serving


@pytest.fixture(scope="module")
def grpc_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def settings(grpc_port: int) -> Settings:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    return msgspec.structs.replace(
        settings, server=msgspec.structs.replace(settings.server, grpc_port=grpc_port)
    )


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


def put_queue(server: ApiServer, user: str, spec: dict[str, object]) -> httpx.Response:
    return httpx.put(
        f"{server.url}/v1/queue/{spec['name']}", json=spec, auth=(user, f"{user}-pass"), timeout=30
    )


def test_owners_update_their_queue_but_not_who_may_use_it(server: ApiServer, queues: tuple[str, str]) -> None:
    team_a, team_b = queues
    own = {"name": team_a, "groupOwners": ["team-a"]}
    assert put_queue(server, "alice", {**own, "labels": {"tier": "gold"}}).status_code == 200
    for change, field in [
        ({"priorityFactor": 3.0}, "priorityFactor"),
        ({"userOwners": ["alice"]}, "userOwners"),
        ({"groupOwners": ["team-a", "team-b"]}, "groupOwners"),
        (
            {"permissions": [{"subjects": [{"kind": "Group", "name": "everyone"}], "verbs": ["watch"]}]},
            "permissions",
        ),
        ({"cordoned": True}, "cordoned"),
    ]:
        response = put_queue(server, "alice", {**own, **change})
        assert response.status_code == 403, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["field"] == field
    refused_other = put_queue(
        server, "alice", {"name": team_b, "groupOwners": ["team-b"], "labels": {"a": "b"}}
    )
    assert refused_other.status_code == 403
    batch = httpx.put(
        f"{server.url}/v1/batched/update_queues",
        json={"queues": [{"name": team_b, "groupOwners": ["team-a"]}]},
        auth=("alice", "alice-pass"),
        timeout=30,
    )
    assert batch.status_code == 200 and "may not" in batch.json()["failedQueues"][0]["error"]
    with as_user(server, "admin") as admin:
        assert admin.get_queue(team_a).labels == {"tier": "gold"}
        assert admin.get_queue(team_b).group_owners == ["team-b"]
        assert (
            put_queue(server, "admin", {**own, "priorityFactor": 3.0, "userOwners": ["alice"]}).status_code
            == 200
        )
        assert admin.get_queue(team_a).user_owners == ["alice"]
        assert admin.get_queue(team_a).priority_factor == 3.0


CAPPED = {"armada-default": {"maximumResourceFraction": {"cpu": 0.1}}}


def test_an_owner_cannot_take_the_fair_share_or_drop_a_cap(server: ApiServer) -> None:
    """The review's repro: team-b's owner raises its weight to 10000 (and so drops the admin's
    10% CPU cap): refused naming the field and the permission, and nothing changes."""
    capped = {"name": "weights-b", "groupOwners": ["team-b"], "resourceLimitsByPriorityClassName": CAPPED}
    assert (
        httpx.post(
            f"{server.url}/v1/queue", json=capped, auth=("admin", "admin-pass"), timeout=30
        ).status_code
        == 200
    )
    for change, field in [
        ({"name": "weights-b", "groupOwners": ["team-b"], "priorityFactor": 10000}, "priorityFactor"),
        ({**capped, "priorityFactor": 10000}, "priorityFactor"),
        (
            {"name": "weights-b", "groupOwners": ["team-b"], "labels": {"a": "b"}},
            "resourceLimitsByPriorityClassName",
        ),
        ({**capped, "resourceLimits": {"cpu": 1.0}}, "resourceLimits"),
    ]:
        response = put_queue(server, "bob", change)
        assert response.status_code == 403, response.text
        problem = response.json()
        assert problem["field"] == field and "create_queue" in problem["detail"], problem
    with as_user(server, "admin") as admin:
        stored = admin.get_queue("weights-b")
    assert stored.priority_factor == 1.0 and stored.labels == {}
    assert cpu_cap(stored) == 0.1
    # Repeating every other field as it is, the owner changes the labels.
    assert put_queue(server, "bob", {**capped, "labels": {"tier": "gold"}}).status_code == 200
    with as_user(server, "admin") as admin:
        stored = admin.get_queue("weights-b")
    assert stored.labels == {"tier": "gold"}
    assert cpu_cap(stored) == 0.1


def cpu_cap(queue: Queue) -> float:
    return queue.resource_limits_by_priority_class_name["armada-default"].maximum_resource_fraction["cpu"]


def grpc_update(grpc_port: int, user: str, queue: submit_pb2.Queue) -> grpc.StatusCode:
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        stub = submit_pb2_grpc.QueueServiceStub(channel)
        credentials = base64.b64encode(f"{user}:{user}-pass".encode()).decode()
        try:
            stub.UpdateQueue(queue, metadata=[("authorization", f"Basic {credentials}")], timeout=30)
        except grpc.RpcError as failure:
            return failure.code()  # type: ignore[no-any-return,attr-defined]
    return grpc.StatusCode.OK


def test_an_owner_cannot_take_the_fair_share_over_grpc(server: ApiServer, grpc_port: int) -> None:
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name="grpc-b", group_owners=["team-b"]))
    raised = submit_pb2.Queue(name="grpc-b", priority_factor=10000, group_owners=["team-b"])
    assert grpc_update(grpc_port, "bob", raised) == grpc.StatusCode.PERMISSION_DENIED
    labelled = submit_pb2.Queue(name="grpc-b", priority_factor=1, group_owners=["team-b"], labels={"a": "b"})
    assert grpc_update(grpc_port, "bob", labelled) == grpc.StatusCode.OK
    with as_user(server, "admin") as admin:
        stored = admin.get_queue("grpc-b")
    assert (stored.priority_factor, stored.labels) == (1.0, {"a": "b"})
    assert grpc_update(grpc_port, "admin", raised) == grpc.StatusCode.OK


def test_create_queue_alone_does_not_make_one_admin_of_every_queue(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    settings = load_settings(ROOT / "examples" / "config" / "auth-basic.yaml", env={})
    users = {
        **settings.auth.basic_users,
        "carl": BasicUser(password_hash=hash_password("carl-pass", log2_n=4), groups=["creators"]),
    }
    mapping = {**settings.auth.permission_group_mapping, P.CREATE_QUEUE: ["admins", "creators"]}
    auth = msgspec.structs.replace(settings.auth, basic_users=users, permission_group_mapping=mapping)
    with serving(
        sqlite_url(tmp_path_factory.mktemp("creators")), msgspec.structs.replace(settings, auth=auth)
    ) as srv:
        with as_user(srv, "admin") as admin:
            admin.create_queue(Queue(name="team-a", group_owners=["team-a"]))
        team_a = {"name": "team-a", "groupOwners": ["team-a"]}
        assert put_queue(srv, "carl", {**team_a, "priorityFactor": 2.0}).status_code == 200
        taken = put_queue(srv, "carl", {**team_a, "userOwners": ["carl"]})
        assert taken.status_code == 403 and taken.json()["field"] == "userOwners"
        assert "submit_any_jobs" in taken.json()["detail"]
        with as_user(srv, "carl") as carl:
            carl.create_queue(Queue(name="carls"))  # creating is still create_queue's
            assert carl.get_queue("carls").user_owners == ["carl"]


def _follow_rest(server: ApiServer, queue: str, into: SimpleQueue[object]) -> None:
    try:
        with as_user(server, "bob") as bob:
            for streamed in bob.job_set_events(queue, "watched", watch=True):
                into.put(streamed.event.type)
    except ArmadaApiError as exc:
        into.put(exc)


def _follow_grpc(grpc_port: int, queue: str, into: SimpleQueue[object]) -> None:
    credentials = base64.b64encode(b"bob:bob-pass").decode()
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        stream = event_pb2_grpc.EventStub(channel).GetJobSetEvents(
            event_pb2.JobSetRequest(queue=queue, id="watched", watch=True),
            metadata=[("authorization", f"Basic {credentials}")],
        )
        try:
            for message in stream:
                into.put(message.message.WhichOneof("events"))
        except grpc.RpcError as exc:
            into.put(exc)


def test_open_streams_end_when_watch_is_withdrawn(server: ApiServer, grpc_port: int) -> None:
    """bob may watch the queue through its ``permissions``; once the owner's admin withdraws
    that, his open streams (REST and gRPC) end with a refusal before the next event."""
    grant = [{"subjects": [{"kind": "User", "name": "bob"}], "verbs": ["watch"]}]
    spec = {"name": "watched", "groupOwners": ["team-a"], "permissions": grant}
    assert httpx.post(f"{server.url}/v1/queue", json=spec, auth=("admin", "admin-pass")).status_code == 200
    with as_user(server, "alice") as alice:
        alice.submit_jobs("watched", "watched", [item()])
        rest: SimpleQueue[object] = SimpleQueue()
        over_grpc: SimpleQueue[object] = SimpleQueue()
        threads = [
            threading.Thread(target=_follow_rest, args=(server, "watched", rest), daemon=True),
            threading.Thread(target=_follow_grpc, args=(grpc_port, "watched", over_grpc), daemon=True),
        ]
        for thread in threads:
            thread.start()
        for received in (rest, over_grpc):
            assert [received.get(timeout=30) for _ in range(2)] == ["submitted", "queued"]
        withdrawn = put_queue(server, "admin", {**spec, "permissions": []})
        assert withdrawn.status_code == 200, withdrawn.text
        alice.submit_jobs("watched", "watched", [item()])
    ended = rest.get(timeout=30)
    assert isinstance(ended, ArmadaApiError) and ended.status == 403, ended
    assert "may no longer watch" in ended.detail
    refused = over_grpc.get(timeout=30)
    assert isinstance(refused, grpc.RpcError), refused
    assert refused.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
    for thread in threads:
        thread.join(30)
    assert rest.empty() and over_grpc.empty()  # nothing of the new job was delivered
