"""``GET /v1/usage`` and ``armada report usage`` against a real server with auth, on both databases:
the figures of the runs, only for queues the caller may watch, and bad input named."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from armada.cli.main import app
from armada.model import events as ev
from armada.model.queues import Queue
from tests.api.accounts import as_user, example_settings, http_as
from tests.api.jobs import item, start
from tests.databases import DATABASE_KINDS, database_url_for
from tests.servers import ApiServer, serving

UNTIL = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    directory = tmp_path_factory.mktemp("usage")
    with database_url_for(request.param, directory) as url, serving(url, example_settings()) as running:
        yield running


@pytest.fixture(scope="module")
def queue(server: ApiServer) -> str:
    """A team-a queue where one job ran an hour and succeeded, and one ran half an hour and was preempted."""
    name = f"a-{uuid.uuid4().hex[:8]}"
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=name, group_owners=["team-a"]))
    with as_user(server, "alice") as alice:
        done, preempted = alice.submit_jobs(name, "set-1", [item(), item()])
    for job_id, seconds, end in ((done, 3600, ev.JobSucceeded), (preempted, 1800, ev.JobPreempted)):
        run_id = start(server, name, "set-1", job_id)
        ended = datetime.now(UTC) + timedelta(seconds=seconds)
        server.append([end(queue=name, job_set_id="set-1", job_id=job_id, run_id=run_id, created=ended)])
    return name


def test_usage_shows_the_runs_to_the_queues_watchers_only(server: ApiServer, queue: str) -> None:
    with http_as(server, "alice") as alice:
        answer = alice.get("/v1/usage", params={"since": "1d", "until": UNTIL, "by": "queue,pool"})
    assert answer.status_code == 200, answer.text
    [row] = [row for row in answer.json()["rows"] if row["key"]["queue"] == queue]
    assert row["key"] == {"queue": queue, "pool": "gpu"}
    # pod_spec(): 1 cpu, 64Mi; an hour succeeded, half an hour preempted (the clock moved a little more).
    assert row["used"]["cpu"] == pytest.approx(5400, rel=0.01)
    assert row["used"]["memory"] == pytest.approx(5400 * 64 * 2**20, rel=0.01)
    assert row["lost"]["cpu"] == row["preempted"]["cpu"] == pytest.approx(1800, rel=0.01)
    assert row["byOutcome"]["succeeded"]["cpu"] == pytest.approx(3600, rel=0.01)
    assert row["waits"]["leases"] == 2
    assert row["fairShare"] == 1.0 and row["share"]["cpu"] == 1.0
    other = f"a-{uuid.uuid4().hex[:8]}"  # a job leased, not ended: a wait, no usage yet
    with as_user(server, "admin") as admin:
        admin.create_queue(Queue(name=other, group_owners=["team-a"]))
    with as_user(server, "alice") as alice_client:
        [running] = alice_client.submit_jobs(other, "set-2", [item()])
    start(server, other, "set-2", running)
    with http_as(server, "alice") as alice:
        answer = alice.get("/v1/usage", params={"since": "1d", "until": UNTIL, "by": "queue"})
    [waiting] = [row for row in answer.json()["rows"] if row["key"]["queue"] == other]
    assert waiting["waits"]["leases"] == 1
    figures = ("used", "lost", "preempted", "byOutcome", "share")
    assert all(waiting[name] == {} for name in figures), waiting
    with http_as(server, "bob") as bob:  # team-b may not watch team-a's queue
        hidden = bob.get("/v1/usage", params={"since": "1d", "until": UNTIL, "by": "queue"})
    assert hidden.status_code == 200
    assert queue not in {row["key"]["queue"] for row in hidden.json()["rows"]}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "last tuesday"}, "since"),
        ({"until": "2026-13-40"}, "until"),
        ({"since": "2026-11-02", "until": "2026-11-01"}, "until"),
        ({"since": "9999d"}, "since"),
        ({"by": "queue,colour"}, "by"),
        ({"by": "queue,queue"}, "by"),
        ({"resource": "cpu,no way"}, "resource"),
        ({"by": "x" * 300}, "by"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(server: ApiServer, params: dict[str, str], field: str) -> None:
    with http_as(server, "alice") as alice:
        answer = alice.get("/v1/usage", params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field, answer.text


def test_report_usage_prints_a_table_csv_and_json(server: ApiServer, queue: str) -> None:
    env = {"ARMADA_URL": server.url, "ARMADA_USERNAME": "alice", "ARMADA_PASSWORD": "alice-pass"}
    base = ["report", "usage", "--since", "1d", "--until", UNTIL, "--by", "queue,owner"]
    table = CliRunner().invoke(app, base, env=env)
    assert table.exit_code == 0, table.output
    assert queue in table.output and "cpu-h" in table.output
    as_csv = CliRunner().invoke(app, [*base, "--csv"], env=env)
    [row] = [row for row in csv.DictReader(io.StringIO(as_csv.output)) if row["queue"] == queue]
    assert (row["owner"], row["cpu-h"], row["cpu-h-preempted"], row["leases"]) == (
        "alice",
        "1.50",
        "0.50",
        "2",
    )
    as_json = CliRunner().invoke(app, [*base, "--json"], env=env)
    assert f'"queue": "{queue}"' in as_json.output
    refused = CliRunner().invoke(app, ["report", "usage", "--by", "colour"], env=env)
    assert refused.exit_code != 0 and "by" in refused.output
