"""Partition an executor from the server for less than the executor timeout: its runs go
on, its events are retried and deduplicated, and nothing is requeued."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.databases import postgres_database
from tests.e2e.cluster import executor, fake_nodes, wait_for
from tests.faults.proxy import tcp_proxy
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

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS = 600
PARTITION_SECONDS = 5  # the executor timeout of LOAD_SERVER_ENV is 10 s


def test_short_partition_loses_nothing_and_requeues_nothing(tmp_path: Path) -> None:
    with (
        postgres_database() as url,
        running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        tcp_proxy(urlsplit(server.url).port or 0) as proxy,
        executor(tmp_path, proxy.url, "cut-off", args=fake_nodes(50, cpu="4"), env=LOAD_EXECUTOR_ENV),
    ):
        client.create_queue(Queue(name="part"))
        submitter = Submitter(server.url, "part", "set", JOBS, batch=100, command="sleep 2")
        submitter.start()
        wait_for(lambda: "RUNNING" in job_states(url).values(), what="jobs running")
        proxy.partition()
        time.sleep(PARTITION_SECONDS)
        proxy.heal()
        acknowledged = submitter.finish(timeout=120)
        states = wait_until_all_finished(url, JOBS, timeout=180)
        assert {states[job_id] for job_id in acknowledged.values()} == {"SUCCEEDED"}
        assert proxy.refused > 0  # the executor did try to get through
        events = event_counts(url)
        assert events["leaseExpired"] == events["leaseReturned"] == 0, events
        assert events["leased"] == events["running"] == events["succeeded"] == JOBS, events
        assert_invariants_hold(url)
