"""Record a workload in a real log: a server, fake-cluster executors, jobs submitted over HTTP
at given times. Used by the what-if replay's e2e test and by ``bench/simulate.py``."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from armada.client import ArmadaClient
from armada.model.queues import Queue
from armada.model.wire.jobs import JobSubmitRequestItem
from tests.e2e.cluster import FAST_SERVER_ENV, executor, fake_nodes, job, wait_for
from tests.processes import running_server


@dataclass(frozen=True)
class Submission:
    """``items`` submitted to ``queue`` ``at`` seconds after the recording starts."""

    at: float
    queue: str
    items: Sequence[JobSubmitRequestItem]


@dataclass(frozen=True)
class Workload:
    #: queue -> weight
    queues: dict[str, float]
    submissions: list[Submission]
    #: executors x nodes per executor, each node ``node_cpu`` cores
    executors: int = 1
    nodes: int = 8
    node_cpu: str = "1"
    server_env: dict[str, str] = field(default_factory=dict)


def record(workdir: Path, database_url: str, workload: Workload, timeout: float = 600) -> tuple[float, float]:
    """Run ``workload`` on a fresh server over ``database_url`` until every job has ended; the
    recording's ``(start, end)`` in seconds since the epoch."""
    with ExitStack() as stack:
        server = stack.enter_context(
            running_server(workdir, database_url=database_url, env={**FAST_SERVER_ENV, **workload.server_env})
        )
        client = stack.enter_context(ArmadaClient(server.url))
        for name, weight in workload.queues.items():
            client.create_queue(Queue(name=name, priority_factor=weight))
        for index in range(workload.executors):
            stack.enter_context(
                executor(
                    workdir, server.url, f"c{index}", args=fake_nodes(workload.nodes, cpu=workload.node_cpu)
                )
            )
        wait_for(
            lambda: sum(len(e.nodes) for e in client.list_executors()) == workload.executors * workload.nodes,
            what="the executors' nodes to be known",
        )
        start = time.time()
        ids: list[str] = []
        for submission in sorted(workload.submissions, key=lambda s: s.at):
            time.sleep(max(0.0, start + submission.at - time.time()))
            ids += client.submit_jobs(submission.queue, "work", submission.items)

        def ended() -> bool:
            states = {}
            for chunk in range(0, len(ids), 1000):
                states.update(client.job_status(ids[chunk : chunk + 1000]))
            return all(s in ("SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED") for s in states.values())

        wait_for(ended, timeout=timeout, what="every job to end")
        return start - 1.0, time.time() + 1.0


def fairness(seed: int = 1, scale: int = 1, waves: int = 5) -> Workload:
    """Three queues of weights 1, 2 and 0.5 competing for 8 * ``scale`` one-core slots: a wave of
    jobs (2-8 s) every 8 s, more than the cluster can run at once."""
    rng = random.Random(seed)
    submissions = []
    for wave in range(waves):
        for queue in ("team-a", "team-b", "team-c"):
            seconds = [rng.choice((2, 3, 4, 6, 8)) for _ in range(6 * scale)]
            items = [job(f"sleep {s}") for s in seconds]
            submissions.append(Submission(at=wave * 8 + rng.random(), queue=queue, items=items))
    return Workload(
        queues={"team-a": 1.0, "team-b": 2.0, "team-c": 0.5}, submissions=submissions, nodes=8 * scale
    )


def throughput(seed: int = 1, jobs: int = 2000, queues: int = 5) -> Workload:
    """``bench/e2e.py``'s shape: many short jobs in several queues submitted in a few bursts to
    two executors of 50 nodes of 4 cores."""
    rng = random.Random(seed)
    per = jobs // (queues * 4)
    submissions = [
        Submission(
            at=burst * 5.0,
            queue=f"q{q}",
            items=[job(f"sleep {rng.choice((1, 2, 3))}") for _ in range(per)],
        )
        for burst in range(4)
        for q in range(queues)
    ]
    return Workload(
        queues={f"q{q}": 1.0 for q in range(queues)},
        submissions=submissions,
        executors=2,
        nodes=50,
        node_cpu="4",
    )
