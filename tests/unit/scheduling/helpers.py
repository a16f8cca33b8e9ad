"""Small builders shared by the scheduling tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from armada.model.resources import ResourceIndex
from armada.scheduling import (
    RUNNING,
    JobDb,
    JobRequirements,
    NodeDb,
    NodeSpec,
    PriorityClass,
    QueueSpec,
    SchedulerState,
    SchedulingConfig,
    SchedulingResult,
    apply_decisions,
    schedule,
)

GI = 2**30


def unlimited(**overrides: Any) -> SchedulingConfig:
    """Config with rate limits and the time budget out of the way."""
    base: dict[str, Any] = {
        "maximum_scheduling_rate": 1e9,
        "maximum_scheduling_burst": 10**9,
        "maximum_per_queue_scheduling_rate": 1e9,
        "maximum_per_queue_scheduling_burst": 10**9,
        "max_scheduling_duration": 0.0,
    }
    base.update(overrides)
    if "priority_classes" in base:
        base["priority_classes"] = msgspec.convert(base["priority_classes"], dict[str, PriorityClass])
    return SchedulingConfig(**base)


def node(
    node_id: str,
    cpu: int = 8,
    memory_gi: int = 32,
    pool: str = "default",
    extra: dict[str, int] | None = None,
    **kw: Any,
) -> NodeSpec:
    allocatable = {"cpu": cpu * 1000, "memory": memory_gi * GI, **(extra or {})}
    return NodeSpec(id=node_id, pool=pool, executor=f"ex-{pool}", allocatable=allocatable, **kw)


def job(
    job_id: str,
    queue: str,
    cpu: float = 1,
    memory_gi: float = 1,
    extra: dict[str, int] | None = None,
    **kw: Any,
) -> JobRequirements:
    requests = {"cpu": int(cpu * 1000), "memory": int(memory_gi * GI), **(extra or {})}
    return JobRequirements(id=job_id, queue=queue, requests=requests, **kw)


class Sim:
    """A job db plus state that steps through cycles the way the service would."""

    def __init__(self, config: SchedulingConfig | None = None, nodes: Iterable[NodeSpec] = ()) -> None:
        self.config = config or unlimited()
        self.nodes = NodeDb(ResourceIndex())
        for spec in nodes:
            self.nodes.upsert(spec)
        self.db = JobDb(self.config, self.nodes)
        self.state = SchedulerState()
        self.queues: dict[str, QueueSpec] = {}
        self.now = 0.0

    def queue(self, name: str, factor: float = 1.0, **kw: Any) -> None:
        self.queues[name] = QueueSpec(name, priority_factor=factor, **kw)

    def submit(self, jobs: Iterable[JobRequirements]) -> None:
        self.db.add_many(jobs)

    def cycle(
        self,
        advance: float = 1.0,
        apply: bool = True,
        paused_executors: Iterable[str] = (),
        max_leases: int | None = None,
    ) -> SchedulingResult:
        self.now += advance
        result = schedule(
            self.db,
            queues=list(self.queues.values()),
            config=self.config,
            state=self.state,
            now=self.now,
            paused_executors=list(paused_executors),
            max_leases=max_leases,
        )
        if apply:
            apply_decisions(self.db, result)
            self.state = result.state
        return result

    def running(self, queue: str) -> int:
        q = self.db.queue_index(queue)
        n = len(self.db.ids)
        return int(((self.db.cols["state"][:n] == RUNNING) & (self.db.cols["queue"][:n] == q)).sum())
