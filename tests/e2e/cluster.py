"""A whole system for end-to-end tests: ``armada serve`` and ``armada executor`` processes.

Everything talks HTTP: the test submits through :class:`ArmadaClient`, the executors lease
over the executor API, and assertions read the job-set event streams.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from armada.client import ArmadaClient
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION
from armada.model.wire.jobs import JobSubmitRequestItem
from tests.processes import EXECUTOR_TOKEN_ENV, ArmadaProcess

T = TypeVar("T")

#: Server settings that make the system react quickly enough for tests.
FAST_SERVER_ENV = {
    "ARMADA_SCHEDULER_CYCLE_PERIOD": "0.2",
    "ARMADA_SCHEDULER_EXECUTOR_TIMEOUT": "4",
    "ARMADA_SCHEDULER_HEARTBEAT_RECORD_INTERVAL": "1",
    "ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_RATE": "10000",
    "ARMADA_SCHEDULING_MAXIMUM_PER_QUEUE_SCHEDULING_RATE": "10000",
}


@contextmanager
def executor(
    workdir: Path,
    server_url: str,
    cluster_id: str,
    *,
    backend: str = "fake",
    pool: str = "default",
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    program: Path | None = None,
) -> Iterator[ArmadaProcess]:
    command = [
        "executor",
        "--server",
        server_url,
        "--cluster-id",
        cluster_id,
        "--pool",
        pool,
        "--backend",
        backend,
        *args,
    ]
    env = {**EXECUTOR_TOKEN_ENV, **(env or {})}
    log_path = workdir / f"executor-{cluster_id}.log"
    process = ArmadaProcess(command, cwd=workdir, log_path=log_path, env=env, program=program)
    try:
        yield process
    finally:
        process.stop()


def fake_nodes(count: int, cpu: str = "1", memory: str = "8Gi") -> tuple[str, ...]:
    return ("--fake-nodes", str(count), "--fake-node-cpu", cpu, "--fake-node-memory", memory)


def job(
    command: str,
    *,
    cpu: str = "1",
    memory: str = "64Mi",
    priority_class: str = "",
    annotations: dict[str, str] | None = None,
) -> JobSubmitRequestItem:
    """A job running ``sh -c command`` (the fake backend reads ``sleep N`` / ``exit N`` from it)."""
    resources = {"cpu": cpu, "memory": memory}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "alpine:3.20",
                "command": ["sh", "-c"],
                "args": [command],
                "resources": {"requests": dict(resources), "limits": dict(resources)},
            }
        ],
    }
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    return JobSubmitRequestItem(namespace="default", pod_spec=pod_spec, annotations=annotations or {})


def gang(size: int, command: str, gang_id: str, **fields: Any) -> list[JobSubmitRequestItem]:
    annotations = {GANG_ID_ANNOTATION: gang_id, GANG_CARDINALITY_ANNOTATION: str(size)}
    return [job(command, annotations=annotations, **fields) for _ in range(size)]


def wait_for(check: Callable[[], T | None], *, timeout: float = 60, what: str = "condition") -> T:
    """Poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def states_are(client: ArmadaClient, job_ids: list[str], *wanted: str) -> Callable[[], bool]:
    def check() -> bool:
        return all(state in wanted for state in client.job_status(job_ids).values())

    return check


def event_types(client: ArmadaClient, queue: str, job_set_id: str, job_id: str) -> list[str]:
    return [e.event.type for e in client.job_set_events(queue, job_set_id) if e.event.job_id == job_id]


def runs_on(client: ArmadaClient, job_ids: list[str]) -> dict[str, tuple[str, str]]:
    details = client.job_details(job_ids, expand_runs=True)
    return {
        job_id: (d.job_runs[-1].cluster, d.job_runs[-1].node) for job_id, d in details.items() if d.job_runs
    }
