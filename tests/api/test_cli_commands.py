"""The job commands of the CLI against a real server (in-process runner)."""

from __future__ import annotations

import json

from armada.client import ArmadaClient
from armada.model import events as ev
from armada.model.lifecycle import FailureCause
from tests.api.cli import armada
from tests.api.jobs import item, pod_spec, start
from tests.servers import ApiServer


def test_reprioritize_preempt_cancel_and_details(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    spec = pod_spec(priorityClassName="armada-preemptible")
    first, second = client.submit_jobs(queue, "set", [item(pod_spec=spec), item(pod_spec=spec)])
    result = armada(server, "reprioritize", "job", queue, "set", first, "--priority", "4")
    assert (result.exit_code, result.stdout.strip()) == (0, "reprioritized 1 job(s)")
    result = armada(server, "reprioritize", "job-set", queue, "set", "--priority", "2")
    assert result.stdout.strip() == "reprioritized 2 job(s)"
    missing = armada(server, "reprioritize", "job", queue, "set", "nosuchjob", "--priority", "1")
    assert missing.exit_code == 1
    assert "nosuchjob: job not found" in missing.stderr

    start(server, queue, "set", first)
    result = armada(server, "preempt", "job", queue, "set", first, "--reason", "room")
    assert result.stdout.strip() == "preemption requested for 1 job(s)"
    result = armada(server, "cancel", "job", queue, "set", second)
    assert result.stdout.strip() == "cancellation requested for 1 job(s)"

    details = armada(server, "job", "details", first, second, "nosuchjob")
    lines = details.stdout.splitlines()
    assert lines[0].startswith(f"{first}\tRUNNING\t{queue}/set")
    assert lines[1].startswith("  run ") and "RUN_STATE_RUNNING" in lines[1]
    assert lines[2].startswith(f"{second}\tCANCELLED")
    assert lines[-1] == "nosuchjob\tUNKNOWN"
    as_json = json.loads(armada(server, "job", "details", second, "--json", "--spec").stdout)
    assert as_json[second]["jobSpec"]["priorityClassName"] == "armada-preemptible"
    assert armada(server, "job", "status", first).stdout.strip() == f"{first}\tRUNNING"


def test_watch_prints_failures_with_their_reason(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    failing, succeeding = client.submit_jobs(queue, "set", [item(), item()])
    for job_id, outcome in ((failing, "failed"), (succeeding, "succeeded")):
        run_id = start(server, queue, "set", job_id)
        envelope = {"queue": queue, "job_set_id": "set", "job_id": job_id, "run_id": run_id}
        if outcome == "failed":
            server.append(
                [ev.JobFailed(**envelope, reason="OOMKilled", cause=FailureCause.OOM, exit_code=137)]
            )
        else:
            server.append([ev.JobSucceeded(**envelope)])
    result = armada(server, "watch", queue, "set", "--exit-if-inactive")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"job {failing} failed (OOM, exit code 137): OOMKilled",
        "2 job(s) | succeeded: 1, failed: 1",
    ]
