"""Kill the scheduling leader mid-load with a standby on the same database: the standby
takes over and no job is ever leased twice."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from tests.databases import postgres_database
from tests.e2e.cluster import executor, fake_nodes, wait_for
from tests.faults.workload import (
    LOAD_EXECUTOR_ENV,
    LOAD_SERVER_ENV,
    Submitter,
    assert_invariants_hold,
    event_counts,
    fault_seed,
    job_states,
    wait_until_all_finished,
)
from tests.processes import running_server

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS = 1000


def test_leader_killed_mid_load_hands_over_without_double_leasing(tmp_path: Path) -> None:
    seed = fault_seed()
    kill_after = random.Random(seed).uniform(0.0, 4.0)  # after the first job runs: mid-load
    with (
        postgres_database() as url,
        running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV) as leader,
    ):
        wait_for(lambda: "became scheduler leader" in leader.process.log(), what="the first server to lead")
        with (
            running_server(tmp_path, database_url=url, env=LOAD_SERVER_ENV) as standby,
            ArmadaClient(standby.url) as client,
            executor(tmp_path, standby.url, "a", args=fake_nodes(25, cpu="2"), env=LOAD_EXECUTOR_ENV),
            executor(tmp_path, standby.url, "b", args=fake_nodes(25, cpu="2"), env=LOAD_EXECUTOR_ENV),
        ):
            client.create_queue(Queue(name="fo"))
            submitter = Submitter(standby.url, "fo", "set", JOBS, batch=100, command="sleep 1")
            submitter.start()
            wait_for(lambda: "RUNNING" in job_states(url).values(), what="jobs running")
            time.sleep(kill_after)
            leader.process.signal(signal.SIGKILL)
            wait_for(lambda: "became scheduler leader" in standby.process.log(), what="the standby to lead")
            acknowledged = submitter.finish(timeout=120)
            states = wait_until_all_finished(url, JOBS, timeout=180)
        context = f"seed {seed}, leader killed after {kill_after:.1f}s"
        assert {states[job_id] for job_id in acknowledged.values()} == {"SUCCEEDED"}, context
        events = event_counts(url)
        assert events["leased"] == JOBS and events["leaseExpired"] == 0, f"{context}: {events}"
        assert_invariants_hold(url)
