"""Scheduling reports and Prometheus metrics after a real workload: server and fake executor processes.

One node of 2 CPUs: a short job succeeds, two long jobs hold the node, a fourth job waits.
Reports must say why it waits; both ``/metrics`` expositions must match the workload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from typer.testing import CliRunner

from armada.cli.main import app
from armada.client import ArmadaApiError, ArmadaClient
from armada.model.queues import Queue
from tests.databases import database_url_for
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, states_are, wait_for
from tests.metrics import Samples, parse_samples, value
from tests.processes import free_port, running_server

WAIT_REASON = "no node with 1 cpu free in pool default"


@dataclass
class Workload:
    url: str
    executor_metrics_url: str
    short: str
    running: list[str]
    waiting: str


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def workload(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workload]:
    tmp = tmp_path_factory.mktemp(f"reports-{request.param}")
    port = free_port()
    with (
        database_url_for(request.param, tmp) as url,
        running_server(tmp, database_url=url, env=FAST_SERVER_ENV) as server,
        executor(tmp, server.url, "c1", args=(*fake_nodes(1, cpu="2"), "--metrics-port", str(port))),
        ArmadaClient(server.url) as client,
    ):
        client.create_queue(Queue(name="q"))
        short, first = client.submit_jobs("q", "set", [job("sleep 1"), job("sleep 600")])
        wait_for(states_are(client, [short], "SUCCEEDED"), what="the short job to succeed")
        second, waiting = client.submit_jobs("q", "set", [job("sleep 600"), job("sleep 600")])
        wait_for(states_are(client, [first, second], "RUNNING"), what="two long jobs running")
        wait_for(lambda: WAIT_REASON in client.job_report(waiting).reason, what="a cycle to explain the wait")
        yield Workload(server.url, f"http://127.0.0.1:{port}/metrics", short, [first, second], waiting)


def test_job_report_says_why_a_job_waits(workload: Workload) -> None:
    with ArmadaClient(workload.url) as client:
        report = client.job_report(workload.waiting)
    assert (report.state, report.position, report.queued_in_queue) == ("QUEUED", 1, 1)
    assert report.reason.startswith(WAIT_REASON)
    assert "1 nodes match" in report.reason
    assert "best has 0 cpu free" in report.reason
    assert report.key is not None
    assert report.key.requests == {"cpu": "1", "memory": "64Mi"}
    assert report.key.priority_class == "armada-default"
    assert report.lease is None


def test_job_report_says_where_a_job_runs_and_how_one_ended(workload: Workload) -> None:
    with ArmadaClient(workload.url) as client:
        running = client.job_report(workload.running[0])
        finished = client.job_report(workload.short)
    assert running.state == "RUNNING"
    assert running.lease is not None
    assert running.lease.cluster == "c1"
    assert running.lease.node
    assert running.lease.leased is not None
    assert running.reason == f"leased to cluster c1, node {running.lease.node}"
    assert (finished.state, finished.reason) == ("SUCCEEDED", "succeeded")


def test_queue_and_scheduling_reports(workload: Workload) -> None:
    with ArmadaClient(workload.url) as client:
        queue = client.queue_report("q")
        scheduling = client.scheduling_report()
    assert queue.queued == 1
    [key] = queue.keys
    assert key.queued == 1
    assert key.reason.startswith(WAIT_REASON)
    assert queue.pools["default"].actual_share == pytest.approx(1.0)
    assert scheduling.cycles
    latest = scheduling.cycles[0]
    assert latest.pools["default"].queues["q"].fair_share == pytest.approx(1.0)
    assert [r.jobs for r in latest.top_unschedulable_reasons if r.reason.startswith(WAIT_REASON)] == [1]
    assert sum(cycle.scheduled for cycle in scheduling.cycles) <= 3


def test_reports_of_unknown_jobs_and_queues_are_404(workload: Workload) -> None:
    with ArmadaClient(workload.url) as client:
        with pytest.raises(ArmadaApiError) as unknown_job:
            client.job_report("01h0000000000000000000000")
        with pytest.raises(ArmadaApiError) as unknown_queue:
            client.queue_report("nope")
    assert unknown_job.value.status == unknown_queue.value.status == 404


def _cli(*args: str) -> str:
    """``armada report ...`` in this process (a CLI start costs seconds), against the real server."""
    result = CliRunner().invoke(app, ["report", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_report_cli_prints_text_and_json(workload: Workload) -> None:
    text = _cli("job", workload.waiting, "--url", workload.url)
    assert "Position 1 of 1 queued in q" in text
    assert f"Reason: {WAIT_REASON}" in text
    assert json.loads(_cli("job", workload.waiting, "--url", workload.url, "--json"))["position"] == 1
    assert "Why queued jobs wait:" in _cli("scheduling", "--url", workload.url)
    assert "Queued jobs by scheduling key:" in _cli("queue", "q", "--url", workload.url)


def _samples(url: str) -> Samples:
    return parse_samples(httpx.get(url).text)


def test_server_metrics_match_the_workload(workload: Workload) -> None:
    queue = {"queue": "q", "pool": "default"}

    def after_the_short_run() -> Samples | None:
        found = _samples(f"{workload.url}/metrics")
        ended = value(found, "armada_job_run_time_seconds_count", **queue, outcome="succeeded")
        return found if ended == 1 else None

    samples = wait_for(after_the_short_run, what="the short run's time to be observed")
    # Upstream's labels; those with no meaning here are empty or upstream's defaults.
    by_class = {"pool": "default", "priorityClass": "armada-default", "queueName": "q", "queue": "q"}
    queued = {**by_class, "priceBand": "None", "accounting_role": "primary"}
    node = {"nodeType": "", "reservation": "", "physical_pool": "default", "scalable_unit": ""}
    allocated = {**by_class, "cluster": "c1", "priceBand": "None", **node}
    cluster = {"pool": "default", "cluster": "c1", **node, "capacity_class": "dedicated"}

    def series(name: str, labels: dict[str, str], resource: str) -> tuple[str, frozenset[tuple[str, str]]]:
        return name, frozenset({**labels, "resourceType": resource}.items())

    expected = {
        ("armada_queue_queued_jobs", frozenset({**queue, "priorityClass": "armada-default"}.items())): 1,
        series("armada_queue_resource_queued", queued, "cpu"): 1,
        series("armada_queue_resource_queued", queued, "memory"): 64 * 2**20,
        series("armada_queue_resource_allocated", allocated, "cpu"): 2,
        series("armada_queue_resource_allocated", allocated, "pods"): 2,
        series("armada_cluster_capacity", cluster, "cpu"): 2,
        series("armada_cluster_capacity", cluster, "nodes"): 1,
        # Upstream's available capacity is what Armada may use (not net of its own jobs).
        series("armada_cluster_available_capacity", cluster, "cpu"): 2,
        series("armada_cluster_available_capacity", cluster, "nodes"): 1,
        series("armada_cluster_farm_capacity", cluster, "cpu"): 2,
        # Fake nodes report no pod limit (the scheduler treats it as unlimited): no pods
        # capacity is shown, rather than 0 beside the pods allocated.
        series("armada_cluster_capacity", cluster, "pods"): None,
        series("armada_cluster_available_capacity", cluster, "pods"): None,
        (
            "armada_scheduler_scheduled_jobs_total",
            frozenset({**queue, "priority_class": "armada-default", "type": "no-preemption"}.items()),
        ): 3,
        ("armada_scheduler_fair_share", frozenset(queue.items())): 1,
        ("armada_scheduler_actual_share", frozenset(queue.items())): 1,
        ("armada_job_queued_seconds_count", frozenset(queue.items())): 3,
        ("armada_events_appended_total", frozenset({"type": "submitted"}.items())): 4,
        (
            "armada_http_requests_total",
            frozenset({"method": "POST", "route": "/v1/job/submit", "status": "200"}.items()),
        ): 2,
    }
    assert {key: samples.get(key) for key in expected} == expected
    assert value(samples, "armada_scheduler_cycle_seconds_count") > 0
    assert value(samples, "armada_scheduler_demand", **queue) > 0
    assert value(samples, "armada_scheduler_adjusted_fair_share", **queue) > 0


def test_executor_metrics_match_the_workload(workload: Workload) -> None:
    samples = _samples(workload.executor_metrics_url)
    assert value(samples, "armada_executor_leases_received_total", cluster="c1") == 3
    assert value(samples, "armada_executor_pods", cluster="c1", phase="running") == 2
    assert value(samples, "armada_executor_pods", cluster="c1", phase="leased") == 0
    assert value(samples, "armada_executor_report_failures_total", cluster="c1", call="events") == -1


def test_metrics_content_type_names_its_charset_once(workload: Workload) -> None:
    response = httpx.get(f"{workload.url}/metrics")
    assert response.headers.get_list("content-type") == [CONTENT_TYPE_LATEST]
    assert response.headers["content-type"].count("charset") == 1


def test_server_metrics_carry_upstreams_series(workload: Workload) -> None:
    """Upstream's names and labels, so its dashboards read this workload: 3 leases, one success."""

    def followed() -> Samples | None:
        # The gauges read the replica's followed state, which may trail the views a moment.
        found = _samples(f"{workload.url}/metrics")
        running = value(found, "armada_queue_size", queueName="q", queue="q", state="running")
        return found if running == 2 else None

    samples = wait_for(followed, what="the followed state to hold the two running jobs")
    transition = {"queue": "q", "pool": "default"}
    counter = "armada_scheduler_job_state_counter_by_queue_total"
    assert value(samples, "armada_queue_size", queueName="q", queue="q", state="queued") == 1
    assert value(samples, "armada_queue_size", queueName="q", queue="q", state="running") == 2
    assert value(samples, counter, **transition, state="leased", priorState="queued") == 3
    assert value(samples, counter, **transition, state="succeeded", priorState="running") == 1
    assert value(samples, "armada_scheduler_fairness_error", pool="default") == 0
    assert value(samples, "armada_scheduler_node_pool_size", pool="default") == 1
    assert value(samples, "armada_scheduler_oldest_unstarted_lease_seconds") == 0
    assert value(samples, "armada_scheduler_schedule_cycle_times_count") > 0
    heartbeat = "armada_executor_last_heartbeat_timestamp_seconds"
    assert value(samples, heartbeat, cluster="c1", pool="default") > 0
    cpu = {
        name: sample
        for (name, labels), sample in samples.items()
        if name.startswith("armada_scheduler_node_alloca") and ("resource", "cpu") in labels
    }
    node = "armada_scheduler_node_"
    assert cpu == {f"{node}allocatable_resource": 2, f"{node}allocated_resource": 2}
