"""Two servers on one PostgreSQL database: one schedules; the other takes over when it dies."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.databases import postgres_database
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, states_are, wait_for
from tests.processes import running_server

pytestmark = pytest.mark.postgres


def test_standby_takes_over_scheduling_within_five_seconds(tmp_path: Path) -> None:
    with (
        postgres_database() as url,
        running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV) as leader,
    ):
        wait_for(lambda: "became scheduler leader" in leader.process.log(), what="the first server to lead")
        with (
            running_server(tmp_path, database_url=url, env=FAST_SERVER_ENV) as standby,
            ArmadaClient(standby.url) as client,
            executor(tmp_path, standby.url, "c1", args=fake_nodes(4)),
        ):
            client.create_queue(Queue(name="q"))
            first = client.submit_jobs("q", "set", [job("sleep 600")])
            wait_for(
                states_are(client, first, "RUNNING"), what="the leader to schedule via the shared database"
            )
            assert "became scheduler leader" not in standby.process.log()

            leader.process.signal(signal.SIGKILL)
            leader.process.wait(10)
            killed_at = time.monotonic()
            second = client.submit_jobs("q", "set", [job("sleep 600")])
            wait_for(
                states_are(client, second, "LEASED", "PENDING", "RUNNING"),
                timeout=5,
                what="the standby to lead",
            )
            assert time.monotonic() - killed_at < 5
            assert "became scheduler leader" in standby.process.log()
            # The first job kept its single run through the failover.
            leased = [e for e in client.job_set_events("q", "set") if e.event.type == "leased"]
            assert sorted(e.event.job_id for e in leased) == sorted(first + second)
