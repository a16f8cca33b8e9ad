"""SIGKILL an executor: its runs expire and finish elsewhere; when it comes back, the
processes of its expired runs are killed and their results never count."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from armada.client import ArmadaClient
from armada.model import events as ev
from armada.model.queues import Queue
from tests.e2e.cluster import FAST_SERVER_ENV, executor, job, states_are, wait_for
from tests.faults.process_groups import alive, process_groups
from tests.processes import running_server

pytestmark = pytest.mark.slow


def test_returning_executor_kills_its_expired_runs_and_never_reports_them(tmp_path: Path) -> None:
    state = tmp_path / "doomed-state"
    doomed_args = ("--process-cpu", "2", "--process-state-dir", str(state))
    with running_server(tmp_path, env=FAST_SERVER_ENV) as server, ArmadaClient(server.url) as client:
        client.create_queue(Queue(name="q"))
        with executor(tmp_path, server.url, "doomed", backend="process", args=doomed_args) as doomed:
            ids = client.submit_jobs("q", "set", [job("sleep 15"), job("sleep 15")])
            wait_for(states_are(client, ids, "RUNNING"), what="jobs running on the doomed executor")
            orphans = process_groups(state)
            doomed.signal(signal.SIGKILL)
            doomed.wait(10)
        assert len(orphans) == 2 and all(alive(pid) for pid in orphans)  # SIGKILL left them running
        with executor(tmp_path, server.url, "survivor", backend="process", args=("--process-cpu", "2")):

            def leased_to_survivor() -> bool:
                leases = [
                    e.event for e in client.job_set_events("q", "set") if isinstance(e.event, ev.JobLeased)
                ]
                return sum(lease.cluster_id == "survivor" for lease in leases) == 2

            wait_for(leased_to_survivor, timeout=60, what="the expired runs to be leased elsewhere")
            with executor(tmp_path, server.url, "doomed", backend="process", args=doomed_args):
                wait_for(lambda: not any(alive(pid) for pid in orphans), timeout=30, what="orphans killed")
                wait_for(
                    states_are(client, ids, "SUCCEEDED"), timeout=90, what="jobs to finish on the survivor"
                )
        events = [e.event for e in client.job_set_events("q", "set")]
    for job_id in ids:
        mine = [event for event in events if event.job_id == job_id]
        runs = {e.run_id: e.cluster_id for e in mine if isinstance(e, ev.JobLeased)}
        assert sorted(runs.values()) == ["doomed", "survivor"]
        [succeeded] = [e for e in mine if e.type == "succeeded"]
        assert runs[succeeded.run_id] == "survivor"
        doomed_run = next(run for run, cluster in runs.items() if cluster == "doomed")
        assert [e.type for e in mine if e.run_id == doomed_run] == [
            "leased",
            "pending",
            "running",
            "leaseExpired",
        ]
