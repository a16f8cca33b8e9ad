"""Stop PostgreSQL mid-run: the API answers 503 problems, then everything recovers."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.e2e.cluster import executor, fake_nodes, wait_for
from tests.faults.private_postgres import private_postgres
from tests.faults.workload import (
    LOAD_EXECUTOR_ENV,
    LOAD_SERVER_ENV,
    Submitter,
    assert_invariants_hold,
    event_counts,
    job_states,
    wait_until_all_finished,
)
from tests.processes import running_server
from tests.servers import EXECUTOR_HEADERS

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS = 600
OUTAGE_SECONDS = 10
#: One request per API area; each must answer (not hang) with a 503 problem while the DB is down.
PROBES: list[tuple[str, str, object]] = [
    ("GET", "/health", None),
    ("GET", "/v1/queue/outage", None),
    ("POST", "/v1/job/status", {"jobIds": ["01m810j81yhjwbqk5pp5xgs9ys"]}),
    ("POST", "/v1/queue/outage/cordon", None),
    ("POST", "/v1/executor/lease", {"executorId": "probe", "pool": "default", "nodes": []}),
]


def probe(http: httpx.Client) -> Counter[str]:
    """Send every probe once; count ``status content-type`` outcomes."""
    outcomes = Counter[str]()
    for method, path, body in PROBES:
        headers = EXECUTOR_HEADERS if path.startswith("/v1/executor") else {}
        response = http.request(method, path, json=body, headers=headers)
        kind = response.headers.get("content-type", "").split(";")[0]
        outcomes[f"{path} {response.status_code} {kind if response.status_code != 204 else ''}".strip()] += 1
    return outcomes


def test_api_answers_503_during_a_database_outage_and_the_workload_completes(tmp_path: Path) -> None:
    with (
        private_postgres() as postgres,
        running_server(tmp_path, database_url=postgres.url, env=LOAD_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        httpx.Client(base_url=server.url, timeout=15) as http,
        executor(
            tmp_path, server.url, "sim", args=fake_nodes(50, cpu="8", memory="64Gi"), env=LOAD_EXECUTOR_ENV
        ),
    ):
        client.create_queue(Queue(name="outage"))
        submitter = Submitter(server.url, "outage", "set", JOBS, batch=100, command="sleep 2")
        submitter.start()
        wait_for(lambda: "RUNNING" in job_states(postgres.url).values(), what="jobs running")

        postgres.stop()
        outcomes = Counter[str]()
        deadline = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < deadline:
            outcomes += probe(http)
            time.sleep(0.5)
        postgres.start()

        expected = {f"{path} 503 application/problem+json" for _method, path, _body in PROBES}
        assert set(outcomes) == expected, outcomes
        acknowledged = submitter.finish(timeout=120)
        states = wait_until_all_finished(postgres.url, JOBS, timeout=180)
        assert {states[job_id] for job_id in acknowledged.values()} == {"SUCCEEDED"}
        assert len(states) == JOBS
        assert probe(http)["/health 204"] == 1
        # Executors kept running their jobs: no run expired, none was leased twice.
        events = event_counts(postgres.url)
        assert events["leaseExpired"] == 0 and events["leased"] == JOBS, events
        assert_invariants_hold(postgres.url)
