"""Upstream's own Python client, ``armada-client``, against a real ``armada serve`` over gRPC.

One server per database kind runs ``--dev`` (jobs run as local processes) with basic users
and tokens. One test calls every method of the sync client, another every method of the
asyncio client (as the Airflow operator does, then the rest), each checking the answers and
recording the calls, so that a method a newer armada-client adds cannot go untested. A third
server checks TLS.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
import trustme
from armada_client.armada import event_pb2, job_pb2, submit_pb2, submit_pb2_grpc
from armada_client.asyncio_client import ArmadaAsyncIOClient
from armada_client.client import ArmadaClient
from armada_client.typings import JobState

from armada.scheduling.config import PREEMPTIBLE_PRIORITY_CLASS
from tests.e2e.grpc_servers import (
    GRPC_DEV,
    MAX_REQUEST_BYTES,
    NODE_CPU,
    basic,
    grpc_client,
    metadata_channel,
    pod,
    public_methods,
    recorded,
    serve_with_grpc,
)
from tests.processes import Serve, Server


class BasicAuth(grpc.AuthMetadataPlugin):
    def __init__(self, user: str) -> None:
        self.value = "Basic " + base64.b64encode(f"{user}:{user}-pass".encode()).decode()

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        callback((("authorization", self.value),), None)


@pytest.fixture(scope="module")
def serve() -> Serve:
    return GRPC_DEV


def wait_for(client: ArmadaClient, job_id: str, state: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (current := client.get_job_status([job_id]).job_states[job_id]) != state:
        assert time.monotonic() < deadline, f"{job_id} is {JobState(current).name}"
        time.sleep(0.2)


def code_of(call, *args) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as failure:
        call(*args)
    return failure.value.code()  # type: ignore[no-any-return,attr-defined]


def test_queues_jobs_events_and_auth(server: Server) -> None:
    """Every method of the sync client, with its result checked."""
    called: set[str] = set()
    admin, alice, bob = (grpc_client(server, user, called) for user in ("admin", "alice", "bob"))
    assert admin.submit_health().status == 1 and admin.event_health().status == 1

    # Queue CRUD, with ALREADY_EXISTS and NOT_FOUND, and creation needing its permission.
    queue = admin.create_queue_request("team-a", 2.0, group_owners=["team-a"])
    admin.create_queue(queue)
    assert code_of(admin.create_queue, queue) == grpc.StatusCode.ALREADY_EXISTS
    assert code_of(alice.create_queue, admin.create_queue_request("mine", 1.0)) == (
        grpc.StatusCode.PERMISSION_DENIED
    )
    assert code_of(admin.get_queue, "nope") == grpc.StatusCode.NOT_FOUND
    assert code_of(admin.delete_queue, "nope") == grpc.StatusCode.NOT_FOUND
    admin.update_queue(admin.create_queue_request("team-a", 3.0, group_owners=["team-a"]))
    assert admin.get_queue("team-a").priority_factor == 3.0
    # Owners may update their queue's labels only (its weight takes create_queue, as upstream);
    # others may not touch it (REST's owner_or).
    labelled = admin.create_queue_request("team-a", 3.0, group_owners=["team-a"])
    labelled.labels["tier"] = "gold"
    alice.update_queue(labelled)
    assert admin.get_queue("team-a").labels == {"tier": "gold"}
    heavier = admin.create_queue_request("team-a", 4.0, group_owners=["team-a"])
    assert code_of(alice.update_queue, heavier) == grpc.StatusCode.PERMISSION_DENIED
    assert admin.get_queue("team-a").priority_factor == 3.0
    assert code_of(bob.update_queue, admin.create_queue_request("team-a", 1.0, group_owners=["team-a"])) == (
        grpc.StatusCode.PERMISSION_DENIED
    )
    updated = admin.update_queues(
        [
            admin.create_queue_request("team-a", 5.0, group_owners=["team-a"]),
            admin.create_queue_request("gone", 1),
        ]
    )
    assert [f.queue.name for f in updated.failed_queues] == ["gone"]
    assert admin.get_queue("team-a").priority_factor == 5.0
    failed = admin.create_queues([admin.create_queue_request("b1", 1.0), queue])
    assert [f.queue.name for f in failed.failed_queues] == ["team-a"]
    assert {q.name for q in admin.get_queues()} >= {"team-a", "b1"}
    admin.delete_queue("b1")
    assert code_of(admin.get_queue, "b1") == grpc.StatusCode.NOT_FOUND
    assert code_of(admin.create_queue, admin.create_queue_request("bad name!", 1.0)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    assert code_of(ArmadaClient(grpc.insecure_channel(server.grpc_address)).get_queue, "team-a") == (
        grpc.StatusCode.UNAUTHENTICATED
    )
    executor = ArmadaClient(metadata_channel(server.grpc_address, "Bearer executor-token"))
    assert executor.get_queue("team-a").name == "team-a"  # a static bearer token
    wrong = ArmadaClient(metadata_channel(server.grpc_address, "Bearer not-a-token"))
    assert code_of(wrong.get_queue, "team-a") == grpc.StatusCode.UNAUTHENTICATED

    # Submit (alice owns team-a through her group; bob may not), watch to SUCCEEDED.
    items = [alice.create_job_request_item(pod_spec=pod("exit", "0"), namespace="default")]
    items[0].external_job_uri = "https://ci.example/run/1"
    assert code_of(bob.submit_jobs, "team-a", "set-1", items) == grpc.StatusCode.PERMISSION_DENIED
    job_id = alice.submit_jobs("team-a", "set-1", items).job_response_items[0].job_id
    wait_for(alice, job_id, submit_pb2.SUCCEEDED)
    events = list(_events(alice, "team-a", "set-1", until="succeeded"))
    kinds = [message.message.WhichOneof("events") for message in events]
    assert kinds[0] == "submitted" and kinds[-1] == "succeeded" and "running" in kinds
    assert all(int(e.id) < int(f.id) for e, f in itertools.pairwise(events))
    submitted = events[0].message.submitted.job
    assert submitted.pod_spec.containers[0].resources.requests["cpu"].string == "100m"
    resumed = list(_events(alice, "team-a", "set-1", from_id=events[-2].id, until="succeeded"))
    assert [m.id for m in resumed] == [events[-1].id]
    assert code_of(lambda: list(_events(bob, "team-a", "set-1", until="x"))) == (
        grpc.StatusCode.PERMISSION_DENIED
    )
    # The client's own resilient (watching, errorIfMissing) stream, and the deprecated Watch.
    stream = alice.get_job_events_stream("team-a", "set-1")
    seen = []
    for message in stream:
        seen.append(alice.unmarshal_event_response(message).type.value)
        if seen[-1] == "succeeded":
            break
    alice.unwatch_events(stream)
    assert seen == kinds and list(stream) == []
    watch = alice.event_stub.Watch(event_pb2.WatchRequest(queue="team-a", job_set_id="set-1"))
    assert next(iter(watch)).message.WhichOneof("events") == "submitted"
    watch.cancel()
    finished = alice.preempt_jobs("team-a", "set-1", job_id)
    assert dict(finished.preemption_results) == {}  # nothing to preempt, no error
    details = alice.get_job_details([job_id]).job_details[job_id]
    assert details.state == submit_pb2.SUCCEEDED and details.queue == "team-a"
    run = alice.get_job_run_details([details.latest_run_id]).job_run_details[details.latest_run_id]
    assert run.job_id == job_id and run.state == job_pb2.RUN_STATE_SUCCEEDED
    assert alice.get_job_errors([job_id]).job_errors[job_id] == ""
    found = alice.get_job_status_by_external_job_uri("team-a", "set-1", "https://ci.example/run/1")
    assert dict(found.job_states) == {job_id: submit_pb2.SUCCEEDED}
    assert bob.get_job_status([job_id]).job_states[job_id] == submit_pb2.UNKNOWN
    assert alice.get_job_status(["nope"]).job_states["nope"] == submit_pb2.UNKNOWN

    # Cancel by id; reprioritize; cancel by set with a state filter: only the QUEUED job
    # goes, the RUNNING one of the same set runs on until it is cancelled by id.
    sleepers = [alice.create_job_request_item(pod_spec=pod("sleep", "300"), namespace="default")] * 2
    first, running = (i.job_id for i in alice.submit_jobs("team-a", "set-2", sleepers).job_response_items)
    assert list(alice.cancel_jobs(queue="team-a", job_set_id="set-2", job_id=first).cancelled_ids) == [first]
    wait_for(alice, running, submit_pb2.RUNNING)
    whole_node = alice.create_job_request_item(pod_spec=pod("true", cpu=NODE_CPU), namespace="default")
    queued = alice.submit_jobs("team-a", "set-2", [whole_node]).job_response_items[0].job_id
    reprioritized = alice.reprioritize_jobs(
        new_priority=5.0, job_ids=[queued], job_set_id="set-2", queue="team-a"
    )
    assert dict(reprioritized.reprioritization_results) == {queued: ""}
    assert alice.get_job_status([queued]).job_states[queued] == submit_pb2.QUEUED
    alice.cancel_jobset("team-a", "set-2", [JobState.QUEUED])
    assert alice.get_job_status([queued]).job_states[queued] == submit_pb2.CANCELLED
    assert not {"cancelling", "cancelled"} & set(job_event_kinds(alice, "team-a", "set-2", running))
    assert alice.get_job_status([running]).job_states[running] == submit_pb2.RUNNING
    cancelled = alice.cancel_jobs(queue="team-a", job_set_id="set-2", job_id=running)
    assert list(cancelled.cancelled_ids) == [running]
    for job in (first, running):
        wait_for(alice, job, submit_pb2.CANCELLED)
    assert job_event_kinds(alice, "team-a", "set-2", running)[-1] == "cancelled"
    bad = [alice.create_job_request_item(pod_spec=pod("true"), namespace="")]
    assert code_of(alice.submit_jobs, "team-a", "set-3", bad) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(alice.submit_jobs, "nope", "set-3", items) == grpc.StatusCode.NOT_FOUND
    # NUL characters (PostgreSQL cannot store them) are refused in any field, pod specs too.
    nul = [alice.create_job_request_item(pod_spec=pod("echo", "a\x00b"), namespace="default")]
    assert code_of(alice.submit_jobs, "team-a", "set-3", nul) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(alice.get_queue, "te\x00am") == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(alice.get_job_status, ["\x00"]) == grpc.StatusCode.INVALID_ARGUMENT
    huge = [
        alice.create_job_request_item(
            pod_spec=pod("true"), namespace="default", labels={"a": "x" * MAX_REQUEST_BYTES}
        )
    ]
    assert code_of(alice.submit_jobs, "team-a", "set-3", huge) == grpc.StatusCode.RESOURCE_EXHAUSTED

    # Cordon refuses jobs (FAILED_PRECONDITION); the queue-wide cancel needs no job ids.
    queues = admin.queue_stub
    queues.CordonQueue(submit_pb2.QueueCordonRequest(name="team-a"))
    assert code_of(alice.submit_jobs, "team-a", "set-4", items) == grpc.StatusCode.FAILED_PRECONDITION
    queues.UncordonQueue(submit_pb2.QueueUncordonRequest(name="team-a"))
    waiting = alice.submit_jobs("team-a", "set-4", sleepers[:1]).job_response_items[0].job_id
    alice.queue_stub.CancelOnQueue(submit_pb2.QueueCancelRequest(name="team-a"))
    wait_for(alice, waiting, submit_pb2.CANCELLED)
    alice.queue_stub.PreemptOnQueue(submit_pb2.QueuePreemptRequest(name="team-a"))
    assert code_of(bob.queue_stub.CancelOnQueue, submit_pb2.QueueCancelRequest(name="team-a")) == (
        grpc.StatusCode.PERMISSION_DENIED
    )
    active = alice.job_stub.GetActiveQueues(job_pb2.GetActiveQueuesRequest()).active_queues_by_pool
    assert all("team-a" not in pool.queues for pool in active.values())  # everything has finished
    assert called == public_methods(ArmadaClient)


def test_retry_policies(server: Server) -> None:
    """``api.RetryPolicyService`` through upstream's generated stub (armada-client has no helper)."""
    admin = submit_pb2_grpc.RetryPolicyServiceStub(metadata_channel(server.grpc_address, basic("admin")))
    alice = submit_pb2_grpc.RetryPolicyServiceStub(metadata_channel(server.grpc_address, basic("alice")))
    rule = submit_pb2.RetryRule(action=submit_pb2.RETRY_ACTION_RETRY, on_category="transient")
    policy = submit_pb2.RetryPolicy(
        name=f"transient-{server.kind}",
        retry_limit=2,
        default_action=submit_pb2.RETRY_ACTION_FAIL,
        rules=[rule],
    )
    assert code_of(alice.CreateRetryPolicy, policy) == grpc.StatusCode.PERMISSION_DENIED
    admin.CreateRetryPolicy(policy)
    assert code_of(admin.CreateRetryPolicy, policy) == grpc.StatusCode.ALREADY_EXISTS
    assert alice.GetRetryPolicy(submit_pb2.RetryPolicyGetRequest(name=policy.name)) == policy
    policy.retry_limit = 3
    admin.UpdateRetryPolicy(policy)
    listed = alice.GetRetryPolicies(submit_pb2.RetryPolicyListRequest()).retry_policies
    assert [p.retry_limit for p in listed if p.name == policy.name] == [3]
    unnamed = submit_pb2.RetryPolicy(name="x", rules=[submit_pb2.RetryRule(on_category="y")])
    assert code_of(admin.CreateRetryPolicy, unnamed) == grpc.StatusCode.INVALID_ARGUMENT
    # A queue names it over gRPC too; the policy cannot be deleted while it does.
    queue = f"retried-{server.kind}"
    grpc_client(server, "admin").create_queue(
        submit_pb2.Queue(name=queue, priority_factor=1, retry_policies=[policy.name])
    )
    delete = submit_pb2.RetryPolicyDeleteRequest(name=policy.name)
    assert code_of(admin.DeleteRetryPolicy, delete) == grpc.StatusCode.FAILED_PRECONDITION
    grpc_client(server, "admin").delete_queue(queue)
    admin.DeleteRetryPolicy(delete)
    get = submit_pb2.RetryPolicyGetRequest(name=policy.name)
    assert code_of(admin.GetRetryPolicy, get) == grpc.StatusCode.NOT_FOUND


def _events(client: ArmadaClient, queue: str, job_set: str, *, until: str, from_id: str = "") -> Iterator:
    """The job set's events up to the first of kind ``until`` (or the end of a non-watching stream)."""
    request = event_pb2.JobSetRequest(id=job_set, queue=queue, from_message_id=from_id, watch=False)
    for message in client.event_stub.GetJobSetEvents(request):
        yield message
        if message.message.WhichOneof("events") == until:
            return


def job_event_kinds(client: ArmadaClient, queue: str, job_set: str, job_id: str) -> list[str]:
    """The kinds of the job set's events (so far) about ``job_id``."""
    kinds = []
    for message in _events(client, queue, job_set, until=""):
        kind = message.message.WhichOneof("events")
        if getattr(message.message, kind).job_id == job_id:
            kinds.append(kind)
    return kinds


def test_airflow_operator_pattern_and_every_asyncio_client_method(server: Server) -> None:
    """What ``ArmadaOperator`` does: submit one item with an external URI, poll status, read
    details and errors after a failure, find the job again by its URI, cancel a running one;
    then every other method of the asyncio client, with its result checked."""
    called: set[str] = set()

    async def scenario() -> None:
        channel = grpc.aio.insecure_channel(server.grpc_address, interceptors=_async_headers(basic("admin")))
        client = recorded(ArmadaAsyncIOClient(channel), called)
        assert (await client.submit_health()).status == 1 and (await client.event_health()).status == 1
        await client.create_queue(client.create_queue_request("airflow", 1.0))
        item = submit_pb2.JobSubmitRequestItem(
            pod_spec=pod("exit", "3"),
            namespace="default",
            external_job_uri="https://airflow.example/dag/run/1",
            required_node_labels={},
        )
        response = await client.submit_jobs("airflow", "dag-1", [item])
        job_id = response.job_response_items[0].job_id
        await wait_async(client, job_id, submit_pb2.FAILED)
        details = (await client.get_job_details([job_id])).job_details[job_id]
        assert details.state == submit_pb2.FAILED
        assert "3" in (await client.get_job_errors([job_id])).job_errors[job_id]
        found = await client.get_job_status_by_external_job_uri(
            "airflow", "dag-1", "https://airflow.example/dag/run/1"
        )
        assert dict(found.job_states) == {job_id: submit_pb2.FAILED}
        run = (await client.get_job_run_details([details.latest_run_id])).job_run_details
        assert run[details.latest_run_id].job_id == job_id
        assert run[details.latest_run_id].state == job_pb2.RUN_STATE_FAILED

        # The operator's task is killed while its job runs: it cancels the job.
        item.pod_spec.CopyFrom(pod("sleep", "300"))
        item.external_job_uri = "https://airflow.example/dag/run/2"
        response = await client.submit_jobs("airflow", "dag-1", [item])
        running = response.job_response_items[0].job_id
        await wait_async(client, running, submit_pb2.RUNNING)
        cancelled = await client.cancel_jobs(queue="airflow", job_set_id="dag-1", job_id=running)
        assert list(cancelled.cancelled_ids) == [running]
        await wait_async(client, running, submit_pb2.CANCELLED)
        found = await client.get_job_status_by_external_job_uri("airflow", "dag-1", item.external_job_uri)
        assert dict(found.job_states) == {running: submit_pb2.CANCELLED}
        # The client's resilient (watching) stream shows the job's life up to its cancellation.
        stream = await client.get_job_events_stream("airflow", "dag-1")
        kinds = []
        async for message in stream:
            event = client.unmarshal_event_response(message)
            if event.message.job_id == running:
                kinds.append(event.type.value)
                if kinds[-1] == "cancelled":
                    break
        client.unwatch_events(stream)
        assert kinds[0] == "submitted" and "running" in kinds and kinds[-1] == "cancelled"
        assert [message async for message in stream] == []

        # Queue management, ALREADY_EXISTS and NOT_FOUND answered per queue in batches.
        queues = [client.create_queue_request("aq-1", 1.0), client.create_queue_request("airflow", 1.0)]
        assert [f.queue.name for f in (await client.create_queues(queues)).failed_queues] == ["airflow"]
        await client.update_queue(client.create_queue_request("aq-1", 2.0))
        assert (await client.get_queue("aq-1")).priority_factor == 2.0
        queues = [client.create_queue_request("aq-1", 3.0), client.create_queue_request("absent", 1.0)]
        assert [f.queue.name for f in (await client.update_queues(queues)).failed_queues] == ["absent"]
        assert (await client.get_queue("aq-1")).priority_factor == 3.0
        assert {"airflow", "aq-1"} <= {q.name for q in await client.get_queues()}
        await client.delete_queue("aq-1")
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await client.get_queue("aq-1")
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND

        # Reprioritize a job queued behind a running one, cancel only the set's QUEUED jobs,
        # then preempt the running one.
        preemptible = pod("sleep", "300")
        preemptible.priorityClassName = PREEMPTIBLE_PRIORITY_CLASS
        held_item = client.create_job_request_item(pod_spec=preemptible, namespace="default")
        held = (await client.submit_jobs("airflow", "dag-2", [held_item])).job_response_items[0].job_id
        await wait_async(client, held, submit_pb2.RUNNING)
        whole_node = client.create_job_request_item(pod_spec=pod("true", cpu=NODE_CPU), namespace="default")
        waiting = (await client.submit_jobs("airflow", "dag-2", [whole_node])).job_response_items[0].job_id
        reprioritized = await client.reprioritize_jobs(
            new_priority=2.0, job_ids=[waiting], job_set_id="dag-2", queue="airflow"
        )
        assert dict(reprioritized.reprioritization_results) == {waiting: ""}
        await client.cancel_jobset("airflow", "dag-2", [JobState.QUEUED])
        states = (await client.get_job_status([held, waiting])).job_states
        assert dict(states) == {held: submit_pb2.RUNNING, waiting: submit_pb2.CANCELLED}
        preempted = await client.preempt_jobs("airflow", "dag-2", held)
        assert dict(preempted.preemption_results) == {held: ""}
        await wait_async(client, held, submit_pb2.PREEMPTED)
        await channel.close()

    asyncio.run(scenario())
    assert called == public_methods(ArmadaAsyncIOClient)
    # REST sees the same jobs by their external URIs.
    response = httpx.post(
        f"{server.url}/v1/job/statusUsingExternalJobUri",
        json={"queue": "airflow", "jobset": "dag-1", "externalJobUri": "https://airflow.example/dag/run/1"},
        auth=("admin", "admin-pass"),
    )
    assert list(response.json()["jobStates"].values()) == ["FAILED"]


async def wait_async(client: ArmadaAsyncIOClient, job_id: str, state: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (current := (await client.get_job_status([job_id])).job_states[job_id]) != state:
        assert time.monotonic() < deadline, f"{job_id} is {JobState(current).name}"
        await asyncio.sleep(0.2)


@pytest.mark.slow
def test_watching_stream_survives_a_minute_of_silence(server: Server) -> None:
    if server.kind != "sqlite":
        pytest.skip("the transport is the same for both databases: once is enough")

    async def scenario() -> None:
        channel = grpc.aio.insecure_channel(server.grpc_address, interceptors=_async_headers(basic("admin")))
        client = ArmadaAsyncIOClient(channel)
        await client.create_queue(client.create_queue_request("quiet", 1.0))
        stream = client.event_stub.GetJobSetEvents(event_pb2.JobSetRequest(id="s", queue="quiet", watch=True))
        first = asyncio.ensure_future(anext(aiter(stream)))
        await asyncio.sleep(60)
        assert not first.done()
        item = submit_pb2.JobSubmitRequestItem(pod_spec=pod("true"), namespace="default")
        await client.submit_jobs("quiet", "s", [item])
        message = await asyncio.wait_for(first, 10)
        assert message.message.WhichOneof("events") == "submitted"
        stream.cancel()
        await channel.close()

    asyncio.run(scenario())


def _async_headers(authorization: str) -> list[grpc.aio.ClientInterceptor]:
    """grpc.aio gives each interceptor one kind of call: one for unary, one for streams."""

    def with_header(details):  # type: ignore[no-untyped-def]
        metadata = grpc.aio.Metadata(*(details.metadata or ()), ("authorization", authorization))
        return details._replace(metadata=metadata)

    class Unary(grpc.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
            return await continuation(with_header(details), request)

    class Streaming(grpc.aio.UnaryStreamClientInterceptor):
        async def intercept_unary_stream(self, continuation, details, request):  # type: ignore[no-untyped-def]
            return await continuation(with_header(details), request)

    return [Unary(), Streaming()]


def test_tls(tmp_path: Path) -> None:
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1", "localhost")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    database_url = f"sqlite:///{tmp_path / 'armada.db'}"
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    process, _, grpc_port = serve_with_grpc(tmp_path, database_url, *tls)
    try:
        deadline = time.monotonic() + 60
        credentials = grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(authority.cert_pem.bytes()),
            grpc.metadata_call_credentials(BasicAuth("admin")),
        )
        while True:
            assert process.process.poll() is None, process.log()
            try:
                client = ArmadaClient(grpc.secure_channel(f"localhost:{grpc_port}", credentials))
                client.create_queue(client.create_queue_request("tls", 1.0))
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, process.log()
                time.sleep(0.2)
        assert client.get_queue("tls").name == "tls"
        plain = ArmadaClient(grpc.insecure_channel(f"127.0.0.1:{grpc_port}"))
        with pytest.raises(grpc.RpcError):
            plain.get_queue("tls")
    finally:
        process.stop()
