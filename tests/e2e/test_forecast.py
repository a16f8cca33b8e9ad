"""Forecasts on a whole system: jobs with known runtimes start within their forecast range.

A real ``armada serve`` (forecasts refreshed every half second) and a fake-cluster executor
with one 1-cpu node. Each job sleeps as long as its ``expectedRuntime`` hint says (the fake
backend reads the ``sleep``), so the queue drains as the hints predict; every queued job's
actual lease must fall inside the range forecast while it waited.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from armada.model.wire.forecasts import ForecastOutcome, JobForecastInfo
from armada.scheduling.runtimes import EXPECTED_RUNTIME_ANNOTATION
from tests.databases import SQLITE_ONLY
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, states_are, wait_for
from tests.processes import Serve, Server

RUNTIME = 8  # seconds each job sleeps, and says it will

pytestmark = SQLITE_ONLY


@pytest.fixture(scope="module")
def serve() -> Serve:
    return Serve(env={**FAST_SERVER_ENV, "ARMADA_SCHEDULING_FORECAST_INTERVAL": "0.5"})


def timed(seconds: int) -> object:
    return job(f"sleep {seconds}", annotations={EXPECTED_RUNTIME_ANNOTATION: f"{seconds}s"})


def test_jobs_start_within_their_forecast_range(tmp_path: Path, server: Server) -> None:
    with ArmadaClient(server.url) as client, executor(tmp_path, server.url, "c1", args=fake_nodes(1)):
        client.create_queue(Queue(name="q"))
        [first] = client.submit_jobs("q", "set", [timed(RUNTIME)])  # type: ignore[list-item]
        wait_for(states_are(client, [first], "RUNNING"), what="the first job to run")
        waiting = client.submit_jobs("q", "set", [timed(RUNTIME), timed(RUNTIME)])  # type: ignore[list-item]
        running_since = _event_time(client, first, "running")

        def forecasts() -> dict[str, JobForecastInfo] | None:
            found = client.job_forecast(waiting)
            fresh = all(
                f.outcome is ForecastOutcome.FORECAST and f.as_of is not None and f.as_of > running_since
                for f in found.values()
            )
            return found if fresh else None

        forecast = wait_for(forecasts, what="forecasts of both waiting jobs")
        wait_for(states_are(client, waiting, "SUCCEEDED"), timeout=120, what="both waiting jobs to finish")
        for job_id in waiting:
            started = _event_time(client, job_id, "leased")
            found = forecast[job_id]
            assert found.low is not None and found.high is not None, found
            assert found.low <= started <= found.high, (job_id, found, started)
            assert found.basis.startswith("hint")  # with its running sibling once that has run long


def _event_time(client: ArmadaClient, job_id: str, kind: str) -> datetime:
    return next(
        line.event.created
        for line in client.job_set_events("q", "set")
        if line.event.job_id == job_id and line.event.type == kind
    )
