"""Body of ``GET /v1/usage``: resource-seconds, lost work and waits per group (docs/accounting.md)."""

from __future__ import annotations

from armada.model.wire.base import Response


class WaitFigures(Response):
    """Waits of the runs leased in the period: how many, the mean, and percentiles (the
    upper bound of the bucket each falls in, seconds; see docs/accounting.md)."""

    leases: int = 0
    mean: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0


class UsageRow(Response):
    """One group's figures. ``key`` has one entry per ``by`` dimension; the figures per
    resource are always present (empty: nothing ran to its end in the period)."""

    key: dict[str, str]
    #: Resource-seconds per resource (cpu in cores, memory in bytes, others in their units;
    #: ``jobs`` counts one per running job), every outcome.
    used: dict[str, float]
    #: The part of ``used`` whose work was lost (preempted, retried, returned, expired).
    lost: dict[str, float]
    #: The part of ``used`` lost to preemption.
    preempted: dict[str, float]
    #: ``used`` by how runs ended (succeeded, failed, cancelled, preempted, retried, …).
    by_outcome: dict[str, dict[str, float]]
    #: ``used`` over the ``used`` of every row of the same pool (of the rows the caller may
    #: read; the whole period's if ``by`` has no ``pool``), per resource.
    share: dict[str, float]
    #: With ``by`` holding ``queue``: the queue's fair share in its pool among the queues
    #: that used it then (weight 1/priorityFactor over the sum of theirs).
    fair_share: float | None = None
    #: Waits of the runs leased in the period (none leased: absent).
    waits: WaitFigures | None = None


class UsageResponse(Response):
    since: str
    until: str
    by: list[str]
    rows: list[UsageRow]
