"""``armada serve --workers 2``: two replicas on one socket; jobs run; one schedules."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model.queues import Queue
from armada.reports.build import NO_CYCLE
from tests.databases import postgres_database
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, states_are, wait_for
from tests.processes import ArmadaProcess, running_server


@pytest.mark.postgres
def test_workers_share_the_port_and_exactly_one_schedules(tmp_path: Path) -> None:
    with (
        postgres_database() as url,
        running_server(tmp_path, "--workers", "2", database_url=url, env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
        executor(tmp_path, server.url, "c1", args=fake_nodes(4)),
    ):
        client.create_queue(Queue(name="q"))
        job_ids = client.submit_jobs("q", "set", [job("sleep 0") for _ in range(8)])
        wait_for(states_are(client, job_ids, "SUCCEEDED"), what="the jobs to succeed")
        log = server.process.log()
        assert log.count("Started server process") == 2
        started = [json.loads(line) for line in log.splitlines() if "Started server process" in line]
        assert sorted(line["worker"] for line in started) == [0, 1]  # each line names its worker
        assert log.count("became scheduler leader") == 1
        server.process.signal(signal.SIGTERM)
        assert server.process.wait(30) == 0
        assert server.process.log().count("Finished server process") == 2


def test_workers_need_postgresql(tmp_path: Path) -> None:
    command = ["serve", "--workers", "2", "--database-url", f"sqlite:///{tmp_path / 'armada.db'}"]
    process = ArmadaProcess(command, cwd=tmp_path, log_path=tmp_path / "serve.log")
    try:
        assert process.wait(60) == 2
    finally:
        process.stop()
    assert "--workers > 1 needs PostgreSQL" in process.log()


@pytest.mark.postgres
def test_every_worker_reports_the_leaders_latest_cycles(tmp_path: Path) -> None:
    """Workers share one port, so a report may reach either: both answer with the leader's
    cycles (stored in the database), not "no cycle" from the standby."""
    with (
        postgres_database() as url,
        running_server(tmp_path, "--workers", "2", database_url=url, env=FAST_SERVER_ENV) as server,
        ArmadaClient(server.url) as client,
    ):
        client.create_queue(Queue(name="q"))
        [job_id] = client.submit_jobs("q", "set", [job("sleep 0")])  # no executor: it waits

        def queue_report_seen() -> bool:
            with ArmadaClient(server.url) as fresh:  # a new connection: either worker may answer
                report = fresh.queue_report("q")
            return report.cycle_finished is not None and report.keys[0].reason != NO_CYCLE

        wait_for(queue_report_seen, what="a cycle that considered the job")
        reasons = set()
        for _ in range(12):  # each worker answers some of these (the kernel spreads connections)
            with ArmadaClient(server.url) as fresh:
                assert fresh.scheduling_report().cycles, "a worker reported no cycle"
                queue = fresh.queue_report("q")
                assert queue.cycle_finished is not None
                reasons.add(queue.keys[0].reason)
                assert fresh.job_report(job_id).reason not in (NO_CYCLE, "not yet seen by the scheduler")
        assert len(reasons) == 1 and NO_CYCLE not in reasons, reasons  # the standby maps the leader's keys
        log = server.process.log()
        assert log.count("became scheduler leader") == 1
        assert log.count("standby: another replica leads the scheduler") == 1
