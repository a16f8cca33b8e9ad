"""Fleet controls over real HTTP, on both databases: executor cordons, node cordons,
preempt and cancel on an executor or a node, forgetting an executor, and the executor list.

The test server's scheduler loop is off: each test runs the cycles it needs, and stands in
for executors by calling the lease service with their node reports.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner

from armada.cli.main import build
from armada.client import ArmadaApiError, ArmadaClient
from armada.eventstore.rebuild import rebuild_views
from armada.model.leases import LeaseRequest, LeaseResponse, NodeReport
from armada.scheduler.follower import EventLogFollower
from tests.api.jobs import item, pod_spec, start
from tests.servers import ApiServer

PREEMPTIBLE = "armada-preemptible"


class Fleet:
    """A test's own executors and nodes (labelled with its tag, which its jobs select)."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self.tag = uuid.uuid4().hex[:8]

    def name(self, what: str) -> str:
        return f"{what}-{self.tag}"

    def report(self, executor: str, *nodes: str, cordoned: list[str] | None = None) -> LeaseResponse:
        """The executor's lease call with these nodes (4 CPUs each)."""
        reports = [
            NodeReport(name=n, labels={"fleet": self.tag}, allocatable={"cpu": "4", "memory": "8Gi"})
            for n in nodes
        ]
        request = LeaseRequest(
            executor_id=executor, pool="default", nodes=reports, cordoned_nodes=cordoned or []
        )
        return self.server.run(self.server.app.state.services.leases.lease(request))

    def jobs(self, client: ArmadaClient, queue: str, count: int, priority_class: str = "") -> list[str]:
        extra = {"priorityClassName": priority_class} if priority_class else {}
        spec = pod_spec(nodeSelector={"fleet": self.tag}, **extra)
        return client.submit_jobs(queue, "set", [item(pod_spec=spec) for _ in range(count)])

    def cycle(self) -> None:
        self.server.run(self.server.app.state.services.scheduler.cycle())

    def placed(self, client: ArmadaClient, job_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Job id → (executor, node) of its latest run."""
        details = client.job_details(job_ids, expand_runs=True)
        return {
            job_id: (d.job_runs[-1].cluster, d.job_runs[-1].node)
            for job_id, d in details.items()
            if d.job_runs
        }


@pytest.fixture
def fleet(server: ApiServer) -> Fleet:
    return Fleet(server)


@pytest.fixture
def http(server: ApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def test_a_cordoned_executor_gets_no_new_leases_and_its_running_jobs_go_on(
    server: ApiServer, client: ArmadaClient, queue: str, fleet: Fleet
) -> None:
    cordoned, other = fleet.name("ea"), fleet.name("eb")
    fleet.report(cordoned, fleet.name("a1"))
    fleet.report(other, fleet.name("b1"))
    [running] = fleet.jobs(client, queue, 1)
    start(server, queue, "set", running, node=fleet.name("a1"), cluster=cordoned)

    client.cordon_executor(cordoned, "kernel upgrade")
    new = fleet.jobs(client, queue, 3)
    fleet.cycle()

    assert set(fleet.placed(client, new).values()) == {(other, fleet.name("b1"))}
    assert client.job_status([running]) == {running: "RUNNING"}
    [shown] = [e for e in client.list_executors() if e.name == cordoned]
    assert (shown.cordoned, shown.cordon_reason, shown.running_jobs) == (True, "kernel upgrade", 1)
    report = client.scheduling_report()
    assert report.cordoned_executors[cordoned] == "kernel upgrade"
    assert f"{cordoned}: kernel upgrade" in report.report

    client.cordon_executor(cordoned, cordoned=False)
    later = fleet.jobs(client, queue, 3)  # 3 CPUs: only the uncordoned executor's room is left for them
    fleet.cycle()
    assert (cordoned, fleet.name("a1")) in set(fleet.placed(client, later).values())
    client.delete_executor_settings(cordoned)
    with pytest.raises(ArmadaApiError) as gone:
        client.delete_executor_settings(cordoned)
    assert (gone.value.status, gone.value.field) == (404, "name")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "someone-else", "cordoned": True}, "name"),
        ({"cordoned": False, "cordonReason": "why"}, "cordonReason"),
        ({"cordoned": True, "colour": "red"}, "colour"),
        ({"cordoned": True, "cordonReason": "x" * 1025}, "cordonReason"),
    ],
)
def test_bad_executor_settings_name_the_field_and_change_nothing(
    server: ApiServer, http: httpx.Client, body: dict[str, object], field: str
) -> None:
    head = server.head()
    response = http.put("/v1/executor_settings/e-1", json=body)
    assert response.status_code == 400, response.text
    assert field in response.text
    assert server.head() == head


def test_cordons_survive_a_restart_and_a_rebuild(
    server: ApiServer, client: ArmadaClient, fleet: Fleet
) -> None:
    executor, node = fleet.name("e"), fleet.name("n1")
    fleet.report(executor, node, fleet.name("n2"))
    client.cordon_executor(executor, "draining")
    client.cordon_node(node, reason="bad disk")
    services = server.app.state.services

    async def reloaded() -> EventLogFollower:
        follower = EventLogFollower(services.store, services.scheduling)
        await follower.load()
        return follower

    state = server.run(reloaded()).state
    assert state.cordoned_executors[executor] == "draining"
    assert state.cordoned_nodes[executor] == {node: "bad disk"}
    before = [e for e in client.list_executors() if e.name == executor]
    server.run(rebuild_views(services.store))
    assert [e for e in client.list_executors() if e.name == executor] == before
    assert before[0].nodes[0].cordoned and before[0].nodes[0].cordon_reason == "bad disk"


def test_node_cordon_stops_placements_at_once_and_rides_the_lease_response(
    client: ArmadaClient, queue: str, fleet: Fleet
) -> None:
    executor, bad, good = fleet.name("e"), fleet.name("bad"), fleet.name("good")
    assert fleet.report(executor, bad, good).cordon_nodes == {}
    client.cordon_node(bad, reason="ECC errors")  # the executor is found by the node's name
    jobs = fleet.jobs(client, queue, 4)
    fleet.cycle()  # before the executor's next node report
    assert set(fleet.placed(client, jobs).values()) == {(executor, good)}

    # The next lease call carries the order (at once, even when long-polling), until the
    # executor reports holding the node cordoned.
    assert fleet.report(executor, bad, good).cordon_nodes == {bad: "ECC errors"}
    client.cordon_node(bad, executor, cordoned=False)
    assert fleet.report(executor, bad, good, cordoned=[bad]).cordon_nodes == {}


def test_node_cordon_errors(client: ArmadaClient, fleet: Fleet) -> None:
    first, second, node = fleet.name("e1"), fleet.name("e2"), fleet.name("shared")
    fleet.report(first, node)
    fleet.report(second, node)
    with pytest.raises(ArmadaApiError) as ambiguous:
        client.cordon_node(node)
    assert (ambiguous.value.status, ambiguous.value.field) == (409, "executor")
    with pytest.raises(ArmadaApiError) as unknown:
        client.cordon_node(fleet.name("nowhere"))
    assert (unknown.value.status, unknown.value.field) == (404, "nodeName")
    client.cordon_node(node, second)
    [shown] = [e for e in client.list_executors() if e.name == second]
    assert shown.nodes[0].cordoned
    with pytest.raises(ArmadaApiError) as reasoned:
        client.cordon_node(node, second, reason="fixed", cordoned=False)
    assert (reasoned.value.status, reasoned.value.field) == (400, "reason")


def test_preempt_and_cancel_on_a_node_or_executor_choose_exactly_the_matching_jobs(
    server: ApiServer, client: ArmadaClient, queue: str, fleet: Fleet
) -> None:
    executor, n1, n2 = fleet.name("e"), fleet.name("n1"), fleet.name("n2")
    fleet.report(executor, n1, n2)
    other_queue = f"{queue}-b"
    client.create_queue(type(client.get_queue(queue))(name=other_queue))
    target, elsewhere = fleet.jobs(client, queue, 2, PREEMPTIBLE)
    [fixed] = fleet.jobs(client, queue, 1)
    [foreign] = fleet.jobs(client, other_queue, 1, PREEMPTIBLE)
    for job_id, node in ((target, n1), (elsewhere, n2), (fixed, n1)):
        start(server, queue, "set", job_id, node=node, cluster=executor)
    start(server, other_queue, "set", foreign, node=n1, cluster=executor)

    assert client.preempt_on_executor(executor, node=n1, queues=[queue]) == [target]
    assert client.cancel_on_executor(executor, node=n1, priority_classes=[PREEMPTIBLE]) == sorted(
        [target, foreign]
    )
    assert client.cancel_on_executor(executor, queues=[queue], priority_classes=["armada-default"]) == [fixed]
    assert client.job_status([elsewhere]) == {elsewhere: "RUNNING"}

    head = server.head()
    with pytest.raises(ArmadaApiError) as unknown:
        client.preempt_on_executor(fleet.name("nope"))
    assert (unknown.value.status, unknown.value.field) == (404, "name")
    with httpx.Client(base_url=server.url) as http:
        missing = http.post(f"/v1/node/cancel/{fleet.name('ghost')}", json={"queues": [queue]})
        assert missing.status_code == 404 and missing.json()["field"] == "name"
        wrong = http.post(f"/v1/node/cancel/{n1}", json={"name": n2, "executor": executor})
        assert wrong.status_code == 400 and wrong.json()["field"] == "name"
    assert server.head() == head


def test_a_nodes_executor_may_be_left_out_when_one_executor_has_it(
    server: ApiServer, client: ArmadaClient, queue: str, fleet: Fleet
) -> None:
    executor, other, node, shared = fleet.name("e"), fleet.name("f"), fleet.name("n"), fleet.name("s")
    fleet.report(executor, node, shared)
    fleet.report(other, shared)
    [job_id] = fleet.jobs(client, queue, 1, PREEMPTIBLE)
    start(server, queue, "set", job_id, node=node, cluster=executor)
    result = CliRunner().invoke(build(), ["preempt", "node", node, "--url", server.url])
    assert result.exit_code == 0, result.output
    assert "preemption requested for 1 job(s)" in result.output
    head = server.head()
    with pytest.raises(ArmadaApiError) as several:
        client.cancel_on_executor("", node=shared)
    assert (several.value.status, several.value.field) == (409, "executor")
    assert server.head() == head


def test_cancel_on_a_queue_with_a_state_filter(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    running, queued = client.submit_jobs(queue, "set", [item(), item()])
    start(server, queue, "set", running)
    assert client.cancel_on_queue(queue, states=["QUEUED"]) == [queued]
    assert client.job_status([running, queued]) == {running: "RUNNING", queued: "CANCELLED"}


def test_queue_actions_take_upstreams_bodies_with_the_queue_name(server: ApiServer, queue: str) -> None:
    """Upstream's ``QueuePreemptRequest``/``QueueCancelRequest`` carry ``name``: the path's
    name is accepted, another is a 400 naming ``name`` that changes nothing."""
    head = server.head()
    with httpx.Client(base_url=server.url) as http:
        for action in ("preempt", "cancel"):
            wrong = http.post(f"/v1/queue/{queue}/{action}", json={"name": "other", "priorityClasses": []})
            assert wrong.status_code == 400 and wrong.json()["field"] == "name", wrong.text
        assert server.head() == head
        preempted = http.post(f"/v1/queue/{queue}/preempt", json={"name": queue, "priorityClasses": []})
        assert preempted.status_code == 200 and not preempted.json().get("preemptedIds"), preempted.text
        cancelled = http.post(f"/v1/queue/{queue}/cancel", json={"name": queue, "jobStates": ["QUEUED"]})
        assert cancelled.status_code == 200 and not cancelled.json().get("cancelledIds"), cancelled.text


def test_forgetting_a_vanished_executor_requeues_its_jobs_once(
    server: ApiServer, client: ArmadaClient, queue: str, fleet: Fleet
) -> None:
    executor = fleet.name("gone")
    fleet.report(executor, fleet.name("n1"))
    [job_id] = fleet.jobs(client, queue, 1)
    run_id = start(server, queue, "set", job_id, node=fleet.name("n1"), cluster=executor)

    client.forget_executor(executor)
    with pytest.raises(ArmadaApiError) as again:
        client.forget_executor(executor)
    assert again.value.status == 404
    assert client.job_status([job_id]) == {job_id: "QUEUED"}
    fleet.report(fleet.name("other"), fleet.name("n2"))
    fleet.cycle()  # nothing left for the scheduler to expire; the job goes elsewhere

    assert fleet.placed(client, [job_id]) == {job_id: (fleet.name("other"), fleet.name("n2"))}
    ended = [e.event.type for e in client.job_set_events(queue, "set") if e.event.run_id == run_id]
    assert ended.count("leaseExpired") == 1
    queued = [e.event for e in client.job_set_events(queue, "set") if e.event.type == "queued"]
    assert [getattr(e, "attempts", 0) for e in queued if e.job_id == job_id] == [0, 1]
    assert executor not in {e.name for e in client.list_executors()}
