"""``POST /v1/job/forecast`` over real HTTP, on SQLite and PostgreSQL.

The tests stand in for the executor (node reports and run events); the server's own
forecast service refreshes on demand (its background loop would do the same every 10 s).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import msgspec
import pytest
from typer.testing import CliRunner, Result

from armada.cli import follow
from armada.cli.follow import JobSetSummary
from armada.cli.main import app
from armada.client import ArmadaApiError, ArmadaClient
from armada.model import events as ev
from armada.model.ids import new_run_id
from armada.model.wire.forecasts import ForecastOutcome as Outcome
from armada.scheduling.calibration import PRIOR
from armada.scheduling.forecast import COARSENING, quantile_of
from armada.scheduling.runtime_model import Evidence, estimate_runtime, prior
from armada.scheduling.runtimes import EXPECTED_RUNTIME_ANNOTATION as HINT
from armada.services.forecasts import ForecastService
from tests.api.jobs import item, pod_spec, raw_item
from tests.servers import ApiServer

NEVER_SUBMITTED = "01hzzzzzzzzzzzzzzzzzzzzzzz"


def forecasts_of(server: ApiServer) -> ForecastService:
    service: ForecastService = server.app.state.services.forecasts
    return service


def one_node(server: ApiServer, queue: str) -> dict[str, str]:
    """A 1-cpu node only this test's jobs select: the node selector to give them."""
    label = {"forecast-test": queue}
    node = ev.ExecutorNode(name="node-1", labels=label, allocatable={"cpu": 1000, "memory": 32 * 2**30})
    server.append([ev.ExecutorReported(executor_id=f"ex-{queue}", pool="default", nodes=[node])])
    return label


def run_since(server: ApiServer, queue: str, job_id: str, since: datetime) -> None:
    """The job leased to this test's node and running since ``since``."""
    envelope = {"queue": queue, "job_set_id": "set", "job_id": job_id, "run_id": new_run_id()}
    where = {"cluster_id": f"ex-{queue}", "node_name": "node-1", "pod_name": f"armada-{job_id}-0"}
    server.append(
        [
            ev.JobLeased(
                **envelope, cluster_id=f"ex-{queue}", node_id="node-1", pool="default", created=since
            ),
            ev.JobRunning(**envelope, **where, created=since),
        ]
    )


def close(a: datetime | None, b: datetime, within: float = 3 + COARSENING * 180) -> bool:
    """Equal to the coarsening's precision for leads of about 3 minutes: the jobs of other
    tests on this server run on other nodes, but their ends are simulated too and events
    within ``COARSENING`` of the time already simulated share a step (docs/forecast.md)."""
    return a is not None and abs((a - b).total_seconds()) <= within


def test_queued_jobs_start_as_running_ones_end(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    selector = one_node(server, queue)
    spec = pod_spec(nodeSelector=selector)
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "100s"})])
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=40)
    run_since(server, queue, running, since)
    queued = client.submit_jobs(
        queue, "set", [item(pod_spec=spec, annotations={HINT: "1m"}) for _ in range(2)]
    )
    [huge] = client.submit_jobs(queue, "set", [item(pod_spec=pod_spec(cpu="64", nodeSelector=selector))])
    server.run(forecasts_of(server).refresh())
    [late] = client.submit_jobs(queue, "set", [item(pod_spec=spec)])

    found = client.job_forecast([*queued, running, huge, late, NEVER_SUBMITTED])
    first, second = found[queued[0]], found[queued[1]]
    # The running job ends at its own draw from its hint's distribution (100 s) given it ran
    # 40 s: the first queued job starts then, the second about 60 s after that (its hint's
    # mean, a little longer for its sibling that has run 40 s). Nothing is calibrated yet: the
    # range is the prior's.
    assert first.outcome is Outcome.FORECAST and first.basis == "hint"
    service = forecasts_of(server)
    assert first.as_of is not None
    elapsed = first.as_of.timestamp() - since.timestamp()  # at the refresh
    estimates = service.learner.estimates(service.follower.state, since.timestamp() + elapsed)
    ends = elapsed + estimates[running].draw(quantile_of(running), elapsed)
    assert close(first.expected_start, since + timedelta(seconds=ends))
    after = estimates[queued[0]].mean()
    assert 60 < after < 75 and estimates[queued[0]].basis.startswith("hint")
    assert close(second.expected_start, since + timedelta(seconds=ends + after))
    assert first.as_of is not None and first.as_of >= since + timedelta(seconds=40)
    for each in (first, second):
        assert each.as_of is not None and each.expected_start is not None
        lead = each.expected_start - each.as_of
        assert close(each.low, each.as_of + PRIOR[0] * lead)
        assert close(each.high, each.as_of + PRIOR[1] * lead)
    assert found[running].outcome is Outcome.STARTED
    assert found[huge].outcome is Outcome.NEVER and "fits no node shape" in found[huge].basis
    assert found[late].outcome is Outcome.NOT_YET_FORECAST
    assert found[NEVER_SUBMITTED].outcome is Outcome.UNKNOWN

    page = httpx.post(f"{server.url}/api/v1/jobs", json={"filter": {"queue": queue}, "take": 100}).json()
    shown = {row["jobId"]: row.get("expectedStart") for row in page["jobs"]}
    assert shown[queued[0]] is not None and close(
        datetime.fromisoformat(shown[queued[0]]), first.expected_start
    )
    assert shown[running] is None and shown[late] is None

    # A new job of the queue's typical shape (1 cpu, 64Mi, on this node) queues behind the
    # two waiting jobs: it starts when the second ends, about 60 s after it started.
    new_job = client.queue_report(queue).new_job
    assert new_job is not None and "cpu=1" in new_job.shape and "forecast-test=" in new_job.shape
    assert close(new_job.forecast.expected_start, since + timedelta(seconds=ends + 2 * after))
    assert "A new job of its typical shape would start: in ~" in client.queue_report(queue).report
    assert client.scheduling_report().new_jobs[queue] == new_job

    report = client.job_report(queued[0])
    assert report.forecast == first
    assert "Expected start: in ~" in report.report and "basis: hint" in report.report


def test_job_details_carry_queued_jobs_forecasts_when_asked(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    spec = pod_spec(nodeSelector=one_node(server, queue))
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "100s"})])
    run_since(server, queue, running, datetime.now(UTC))
    [queued] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "1m"})])
    server.run(forecasts_of(server).refresh())
    asked = [queued, running, NEVER_SUBMITTED]

    details = client.job_details(asked, expand_forecast=True)
    assert details[queued].forecast == client.job_forecast([queued])[queued]
    assert details[queued].forecast is not None and details[queued].forecast.outcome is Outcome.FORECAST
    assert details[running].forecast is None  # queued jobs only
    assert NEVER_SUBMITTED not in details  # as without the flag: unknown ids are absent
    assert client.job_details(asked)[queued].forecast is None  # opt-in
    body = {"jobIds": [queued], "expandForecast": True}
    shown = httpx.post(f"{server.url}/v1/job/details", json=body).json()["jobDetails"][queued]
    assert shown["forecast"]["outcome"] == "FORECAST" and shown["forecast"]["basis"] == "hint"


def test_no_room_ever_reads_not_within_the_horizon(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    selector = one_node(server, queue)
    spec = pod_spec(nodeSelector=selector)
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "800h"})])
    run_since(server, queue, running, datetime.now(UTC))
    [waiting] = client.submit_jobs(queue, "set", [item(pod_spec=spec)])
    server.run(forecasts_of(server).refresh())
    found = client.job_forecast([waiting])[waiting]
    assert (found.outcome, found.expected_start) == (Outcome.NOT_WITHIN_HORIZON, None)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/job/forecast", b'{"jobIds": "x"}', "jobIds"),
        ("/v1/job/forecast", b'{"jobIds": [], "extra": 1}', "extra"),
        ("/v1/job/details", b'{"jobIds": [], "expandForecast": "yes"}', "expandForecast"),
    ],
)
def test_bad_bodies_are_400_naming_the_field(server: ApiServer, path: str, body: bytes, field: str) -> None:
    response = server.send_json("POST", path, body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field


def test_a_forecast_that_came_true_calibrates_the_next_ones(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    spec = pod_spec(nodeSelector=one_node(server, queue))
    [job] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "1m"})])
    service = forecasts_of(server)
    server.run(service.refresh())
    assert service.latest.jobs[job].simulated is not None
    assert service.calibration.observed(queue) == 0
    run_since(server, queue, job, datetime.now(UTC))
    server.run(service.refresh())
    assert service.calibration.observed(queue) == 1


def test_the_leader_refreshes_after_changes_only_and_the_other_replicas_read_its_refresh(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    spec = pod_spec(nodeSelector=one_node(server, queue))
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "1h"})])
    run_since(server, queue, running, datetime.now(UTC))
    [first] = client.submit_jobs(queue, "set", [item(pod_spec=spec)])
    service = forecasts_of(server)
    leader = service.scheduler.leader
    assert server.run(leader.ensure())  # SQLite: always; PostgreSQL: takes the leader's lock
    try:
        server.run(service.tick())
        refreshed = service.latest
        assert first in refreshed.jobs
        # Nothing changed, and the first forecast falls due in an hour: no refresh.
        server.run(service.tick())
        assert service.latest is refreshed
        [second] = client.submit_jobs(queue, "set", [item(pod_spec=spec)])
        server.run(service.tick())
        assert second in service.latest.jobs and service.latest is not refreshed
        shared = service.latest
    finally:
        server.run(leader.release())
    if server.store.engine.dialect.name != "postgresql":
        return  # an SQLite database belongs to one process, which always leads
    # No longer the leader: this replica computes nothing and serves what the leader stored.
    service.latest = dataclasses.replace(shared, jobs={})
    server.run(service.tick())
    assert service.latest == shared


def test_openapi_lists_the_route(server: ApiServer) -> None:
    schema = httpx.get(f"{server.url}/schema/openapi.json").json()
    assert "/v1/job/forecast" in schema["paths"]


def test_dry_run_forecasts_jobs_not_submitted_and_stores_nothing(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    selector = one_node(server, queue)
    spec = pod_spec(nodeSelector=selector)
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "100s"})])
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=10)
    run_since(server, queue, running, since)
    head = server.head()
    [first, second] = client.forecast_submission(
        queue, "set", [item(pod_spec=spec, annotations={HINT: "30s"}), item(pod_spec=spec)]
    )
    assert server.head() == head
    assert first is not None and first.outcome is Outcome.FORECAST and first.as_of is not None
    # The running job ends at its own draw given its elapsed time, the first job then runs
    # for its 30 s hint's mean.
    service = forecasts_of(server)
    elapsed = first.as_of.timestamp() - since.timestamp()
    estimate = service.learner.estimates(service.follower.state, first.as_of.timestamp())[running]
    ends = elapsed + estimate.draw(quantile_of(running), elapsed)
    assert close(first.expected_start, since + timedelta(seconds=ends))
    assert second is not None and second.expected_start is not None and first.expected_start is not None
    assert 30 < (second.expected_start - first.expected_start).total_seconds() < 45
    with pytest.raises(ArmadaApiError) as missing:
        client.forecast_submission("no-such-queue", "set", [item()])
    assert (missing.value.status, missing.value.field) == (404, "queue")
    bad = server.send_json(
        "POST",
        "/v1/job/submit",
        msgspec.json.encode(
            {
                "queue": queue,
                "jobSetId": "s",
                "dryRun": True,
                "jobRequestItems": [raw_item(annotations={HINT: "x"})],
            }
        ),
    )
    assert (bad.status_code, bad.json()["field"]) == (400, f"jobRequestItems[0].annotations.{HINT}")
    assert server.head() == head


def test_cli_eta_and_submit_forecast(
    server: ApiServer, client: ArmadaClient, queue: str, tmp_path: Path
) -> None:
    selector = one_node(server, queue)
    spec = pod_spec(nodeSelector=selector)
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "1h"})])
    run_since(server, queue, running, datetime.now(UTC))
    [queued] = client.submit_jobs(queue, "set", [item(pod_spec=spec)])
    server.run(forecasts_of(server).refresh())

    def armada(*args: str) -> Result:
        return CliRunner().invoke(app, list(args), env={"ARMADA_URL": server.url})

    eta = armada("job", "eta", queued, running, NEVER_SUBMITTED)
    lines = eta.stdout.splitlines()
    assert eta.exit_code == 0, eta.output
    assert lines[0].startswith(f"{queued}\tin ~") and "; basis: hint" in lines[0]
    assert lines[1:] == [f"{running}\tstarted", f"{NEVER_SUBMITTED}\tUNKNOWN"]
    details = armada("job", "details", queued).stdout.splitlines()
    assert details[1].startswith("  expected start: in ~") and details[1].endswith("; basis: hint")
    as_json = json.loads(armada("job", "eta", queued, "--json").stdout)
    assert as_json[queued]["outcome"] == "FORECAST"

    job_file = tmp_path / "jobs.yaml"
    job_file.write_text(
        json.dumps(
            {"queue": queue, "jobSetId": "what-if", "jobs": [{"namespace": "default", "podSpec": spec}]}
        )
    )
    head = server.head()
    dry = armada("submit", "--forecast", str(job_file))
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("job 1: in ~") and server.head() == head


def test_watch_shows_when_the_next_queued_job_starts(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    selector = one_node(server, queue)
    spec = pod_spec(nodeSelector=selector)
    [running] = client.submit_jobs(queue, "set", [item(pod_spec=spec, annotations={HINT: "20m"})])
    since = datetime.now(UTC).replace(microsecond=0)
    run_since(server, queue, running, since)
    client.submit_jobs(queue, "set", [item(pod_spec=spec)])
    server.run(forecasts_of(server).refresh())
    summary = JobSetSummary()
    for line in client.job_set_events(queue, "set"):
        summary.apply(line.event)
    follow.Forecasts(client, summary).update()
    # The simulation runs a running job for its own draw from its runtime distribution (the hint's).
    within = forecasts_of(server).learner.learned.within.sigma
    ends = estimate_runtime(Evidence(prior([], within, 3600), hint=1200)).draw(quantile_of(running))
    assert close(summary.next_start, since + timedelta(seconds=ends))
    assert "queued: 1, running: 1 | next start in ~" in summary.line(now=since)


def test_forecasts_pause_above_the_job_limit(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    service = forecasts_of(server)
    [queued] = client.submit_jobs(queue, "set", [item()])
    limit = service.config
    try:
        service.config = msgspec.structs.replace(limit, forecast_max_jobs=1)
        server.run(service.refresh())
        found = client.job_forecast([queued])[queued]
        assert (found.outcome, found.basis) == (Outcome.NOT_YET_FORECAST, "paused: more than 1 active jobs")
        assert client.forecast_submission(queue, "set", [item()]) == [None]
    finally:
        service.config = limit
    server.run(service.refresh())
    assert client.job_forecast([queued])[queued].outcome is not Outcome.NOT_YET_FORECAST
