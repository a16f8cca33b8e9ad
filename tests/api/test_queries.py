"""Job status, details, run details, errors over real HTTP."""

from __future__ import annotations

import httpx

from armada.client import ArmadaClient
from armada.model import events as ev
from armada.model.lifecycle import FailureCause
from tests.api.jobs import item, start
from tests.servers import ApiServer


def test_status_of_unknown_jobs_is_unknown(client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    assert client.job_status([job_id, "nosuchjob"]) == {job_id: "QUEUED", "nosuchjob": "UNKNOWN"}


def test_details_runs_and_errors_of_a_failed_job(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    run_id = start(server, queue, "set", job_id, node="node-7")
    server.append(
        [
            ev.JobFailed(
                queue=queue,
                job_set_id="set",
                job_id=job_id,
                run_id=run_id,
                reason="OOMKilled",
                cause=FailureCause.OOM,
                exit_code=137,
            )
        ]
    )
    details = client.job_details([job_id], expand_runs=True)[job_id]
    assert (details.state, details.queue, details.jobset, details.namespace) == (
        "FAILED",
        queue,
        "set",
        "default",
    )
    assert details.latest_run_id == run_id
    assert details.job_spec is None
    [run] = details.job_runs
    assert (run.run_id, run.state, run.cluster, run.node) == (
        run_id,
        "RUN_STATE_FAILED",
        "cluster-1",
        "node-7",
    )
    assert run.leased_ts and run.pending_ts and run.started_ts and run.finished_ts
    assert client.run_details([run_id, "nosuchrun"]) == {run_id: run}
    assert client.job_errors([job_id]) == {job_id: "OOMKilled"}


def test_details_are_camel_case_with_rfc3339_timestamps(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    [job_id] = client.submit_jobs(queue, "set", [item()])
    body = httpx.post(f"{server.url}/v1/job/details", json={"jobIds": [job_id], "expandJobSpec": True}).json()
    details = body["jobDetails"][job_id]
    assert details["state"] == "QUEUED"
    assert details["submittedTs"].endswith("Z") or "+" in details["submittedTs"]
    assert details["jobSpec"]["podSpec"]["containers"][0]["name"] == "main"
    assert httpx.post(f"{server.url}/v1/job/errors", json={"jobIds": [job_id]}).json() == {
        "jobErrors": {job_id: ""}
    }
