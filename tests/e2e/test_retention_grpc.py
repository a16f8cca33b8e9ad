"""Over gRPC, with upstream's client, a job the server pruned (and its run) answers as an id
never submitted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from armada_client.client import ArmadaClient
from armada_client.typings import JobState

from tests.databases import DATABASE_KINDS  # noqa: F401 (the database_url fixture's kinds)
from tests.e2e.cluster import wait_for
from tests.e2e.grpc_servers import NODE_CPU, pod, serve_with_grpc
from tests.processes import wait_until_healthy

NEVER = "01j0000000000000000never00"
NEVER_RUN = "00000000-0000-4000-8000-000000000000"


def answer(call: Callable[[], Any], job_id: str) -> str:
    """What a call answers, or the status it fails with, with ``job_id`` written as ``ID``."""
    try:
        text = str(call())
    except grpc.RpcError as failure:
        text = f"{failure.code()}: {failure.details()}"  # type: ignore[attr-defined]
    return text.replace(job_id, "ID")


def answers(client: ArmadaClient, queue: str, job_id: str, run_id: str) -> list[str]:
    calls: list[Callable[[], Any]] = [
        lambda: client.get_job_status([job_id]),
        lambda: client.get_job_run_details([run_id]),
        lambda: client.get_job_details([job_id]),
        lambda: client.get_job_errors([job_id]),
        lambda: client.cancel_jobs(queue, "set", job_id),
        lambda: client.reprioritize_jobs(2.0, [job_id], "set", queue),
        lambda: client.preempt_jobs(queue, "set", job_id),
    ]
    return [answer(call, job_id).replace(run_id, "RUN") for call in calls]


def test_a_pruned_job_answers_as_one_never_submitted_over_grpc(database_url: str, tmp_path: Path) -> None:
    env = {
        "ARMADA_RETENTION_EXPIRE_AFTER": "1s",
        "ARMADA_RETENTION_INTERVAL": "1s",
        "ARMADA_EXECUTOR_PROCESS": json.dumps({"stateDir": str(tmp_path / "runs"), "cpu": NODE_CPU}),
    }
    process, port, grpc_port = serve_with_grpc(tmp_path, database_url, "--dev", config=None, env=env)
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process)
        client = ArmadaClient(grpc.insecure_channel(f"127.0.0.1:{grpc_port}"))
        client.create_queue(client.create_queue_request("team", 1.0))
        item = client.create_job_request_item(pod_spec=pod("exit", "0"), namespace="default")
        [response] = client.submit_jobs("team", "set", [item]).job_response_items
        job_id = response.job_id

        def run_id() -> str:  # the job ran (on the dev executor) and finished
            details = client.get_job_details([job_id]).job_details[job_id]
            return details.latest_run_id if details.state == JobState.SUCCEEDED.value else ""

        wait_for(run_id, timeout=60, what="the job to run and succeed")
        ran = client.get_job_details([job_id]).job_details[job_id].latest_run_id
        assert client.get_job_run_details([ran]).job_run_details[ran].job_id == job_id
        client.create_queue(client.create_queue_request("other", 1.0))  # the newest event is not the job's

        def pruned() -> bool:
            state = client.get_job_status([job_id]).job_states[job_id]
            return state == JobState.UNKNOWN.value

        wait_for(pruned, timeout=60, what="the finished job to be pruned")
        assert answers(client, "team", job_id, ran) == answers(client, "team", NEVER, NEVER_RUN)
        # The job set's stream answers as a job set never used (upstream's client asks
        # ``errorIfMissing``: NOT_FOUND).
        stream = client.get_job_events_stream
        assert answer(lambda: list(stream("team", "set")), "'set'") == answer(
            lambda: list(stream("team", "unused")), "'unused'"
        )
    finally:
        process.stop()
