"""Report bodies of ``/v1/scheduling-report``, ``/v1/queue/{name}/scheduler-report`` and
``/v1/job/{jobId}/scheduler-report`` (camelCase JSON, shared by the server and the client)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from armada.model.wire.retry_history import RetryHistory
from armada.scheduling.shares import QueueShare


class Report(msgspec.Struct, rename="camel", kw_only=True):
    """Base of the report bodies (every field always present, for scripts)."""


class ReasonCount(Report):
    reason: str
    jobs: int


class PoolCycle(Report):
    """One pool's part of a cycle."""

    scheduled: int
    preempted: int
    #: queue -> shares (dominant shares in [0, 1])
    queues: dict[str, QueueShare]


class CycleReport(Report):
    finished: datetime
    duration_seconds: float
    considered: int
    scheduled: int
    preempted: int
    rejected: int
    #: Why the cycle ended early ("time budget"); empty when it did not.
    stopped: str
    #: Consecutive idle cycles this entry stands for (the latest of them is shown).
    repeats: int
    pools: dict[str, PoolCycle]
    #: Reasons most queued jobs are waiting for, most common first.
    top_unschedulable_reasons: list[ReasonCount]


class SchedulingReport(Report):
    """The leader's last cycles, newest first (whichever replica answers)."""

    cycles: list[CycleReport]
    #: The same, as text for people (upstream's reports are this one field).
    report: str = ""
    #: Executors an operator cordoned (no new leases), with the reason.
    cordoned_executors: dict[str, str] = {}
    #: Nodes an operator cordoned, as ``executor/node``, with the reason.
    cordoned_nodes: dict[str, str] = {}


class KeyReport(Report):
    """A scheduling key: a set of interchangeable jobs and why its queued jobs wait."""

    key: int
    priority_class: str
    #: Resource requests as Kubernetes quantities.
    requests: dict[str, str]
    node_selector: dict[str, str]
    tolerations: int
    node_affinity: bool
    pools: list[str]
    gang_cardinality: int
    queued: int
    reason: str


class QueueReport(Report):
    queue: str
    priority_factor: float
    cordoned: bool
    queued: int
    #: pool -> shares in the last cycle
    pools: dict[str, QueueShare]
    #: priority class -> resource -> fraction of a pool this queue may hold
    limits: dict[str, dict[str, float]]
    #: Limits the last cycle found this queue at (resource limits, rate limit, lookback).
    limits_hit: list[str]
    #: Queued jobs by scheduling key, largest first.
    keys: list[KeyReport]
    #: When the reasons were decided; ``null`` before the first cycle.
    cycle_finished: datetime | None
    #: The same, as text for people.
    report: str = ""


class LeaseReport(Report):
    run_id: str
    cluster: str
    node: str
    state: str
    leased: datetime | None
    started: datetime | None


class JobReport(Report):
    job_id: str
    queue: str
    job_set_id: str
    state: str
    #: 1-based place in the queue's order while queued (1 = next), else ``null``.
    position: int | None
    #: Queued jobs in the same queue.
    queued_in_queue: int | None
    #: Why it is not running yet (queued), or what became of it.
    reason: str
    key: KeyReport | None
    #: The latest run: where and when it was leased.
    lease: LeaseReport | None
    cycle_finished: datetime | None
    #: Every attempt and what decided the next: retry policy, rule, category, mutations.
    retries: RetryHistory | None = None
    #: The same, as text for people.
    report: str = ""
