"""SIGKILL the server at a random moment under load: nothing acknowledged is lost or doubled."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.databases import postgres_database
from tests.e2e.cluster import executor, fake_nodes
from tests.faults.workload import (
    LOAD_EXECUTOR_ENV,
    LOAD_SERVER_ENV,
    Submitter,
    assert_invariants_hold,
    duplicated_client_ids,
    event_counts,
    failure_reasons,
    fault_seed,
    wait_until_all_finished,
)
from tests.processes import free_port, running_server

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS = 10_000


def test_server_killed_under_load_loses_and_doubles_nothing(tmp_path: Path) -> None:
    seed = fault_seed()
    kill_after = random.Random(seed).uniform(1.0, 12.0)
    port = free_port()
    with postgres_database() as url:
        with running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV, port=port) as first:
            with ArmadaClient(first.url) as client:
                client.create_queue(Queue(name="load"))
            with executor(
                tmp_path,
                first.url,
                "sim",
                args=fake_nodes(250, cpu="8", memory="64Gi"),
                env=LOAD_EXECUTOR_ENV,
            ):
                submitter = Submitter(first.url, "load", "crash", JOBS, command="sleep 1")
                submitter.start()
                time.sleep(kill_after)
                first.process.signal(signal.SIGKILL)
                first.process.wait(10)
                with running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV, port=port):
                    acknowledged = submitter.finish(timeout=300)
                    states = wait_until_all_finished(url, JOBS, timeout=300)
        context = (
            f"seed {seed}, killed after {kill_after:.1f}s, submit failures {dict(submitter.failures)}, "
            f"failures {dict(failure_reasons(url))}"
        )
        assert len(acknowledged) == JOBS, context
        assert {states[job_id] for job_id in acknowledged.values()} == {"SUCCEEDED"}, context
        assert len(states) == JOBS, context
        assert duplicated_client_ids(url) == [], context
        # Executors kept running their jobs: no run expired, none was leased twice.
        events = event_counts(url)
        assert events["leaseExpired"] == 0 and events["leased"] == JOBS, events
        assert_invariants_hold(url)
