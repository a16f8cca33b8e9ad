"""Armada's scheduling core: pure, deterministic, numpy-vectorised.

No I/O and no imports of ``api``/``eventstore``/``services``. The scheduler's in-memory
state (``armada/scheduler/cluster_state.py``) keeps one :class:`NodeDb` and one :class:`JobDb`,
applies the event log to them incrementally, and the scheduler service calls
:func:`schedule` once per cycle::

    from armada.model.resources import ResourceIndex
    from armada.scheduling import (
        JobDb, NodeDb, NodeSpec, QueueSpec, SchedulerState, SchedulingConfig,
        apply_decisions, requirements_from_pod_spec, schedule,
    )

    config = SchedulingConfig()                      # the ``scheduling`` settings area
    nodes = NodeDb(ResourceIndex())
    db = JobDb(config, nodes)
    state = SchedulerState()                          # carried from cycle to cycle

    nodes.upsert(NodeSpec(id="n1", pool="default", executor="cluster-a",
                          allocatable={"cpu": 32_000, "memory": 256 * 2**30}))
    db.add(requirements_from_pod_spec(job_id="j1", queue="q", pod_spec=pod_spec,
                                      annotations=annotations, submitted=t))
    # ... leased / running / finished events -> db.lease / db.requeue / db.remove;
    # reprioritized -> db.reprioritize; node reports -> nodes.upsert / nodes.remove

    result = schedule(db, queues=[QueueSpec("q", priority_factor=1.0)], config=config,
                      state=state, now=now)
    for lease in result.leases:          # columnar; iterating yields Placement structs
        ...                              # append a JobLeased event (a new run on lease.node_id)
    for p in result.preemptions: ...     # p.job_id preempted by p.preempted_by, p.reason
    for r in result.rejections: ...      # fail r.job_id as Rejected with r.reason
    result.reasons.for_job(db, job_id)   # why one queued job is still waiting
    result.queue_summary                 # queue -> reason -> count (scheduling reports)
    result.key_summary                   # key -> reason -> count; db.keys.infos[key].describe()
    result.shares                        # pool -> queue -> QueueShare
    state = result.state                 # token buckets + usage history for the next cycle
    apply_decisions(db, result)          # or feed the appended events back into db

``schedule`` only reads the job db; decisions take effect when they are applied (leased jobs
become running on their node; preempted and rejected jobs leave the db). The algorithm,
formulas and configuration are described in ``docs/scheduling.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from armada.lazy import lazy_exports

if TYPE_CHECKING:
    from armada.model.taints import Taint
    from armada.scheduling.config import PriorityClass, SchedulingConfig
    from armada.scheduling.decisions import (
        CycleStats,
        Leases,
        Placement,
        Preemption,
        Reasons,
        Rejection,
        SchedulingResult,
    )
    from armada.scheduling.jobdb import QUEUED, RUNNING, JobDb
    from armada.scheduling.nodes import NodeDb, NodeSpec
    from armada.scheduling.queues import QueueSpec
    from armada.scheduling.requirements import (
        JobRequirements,
        NodeSelectorRequirement,
        NodeSelectorTerm,
        RequirementsError,
        Toleration,
        requirements_from_pod_spec,
    )
    from armada.scheduling.schedule import apply_decisions, schedule
    from armada.scheduling.shares import QueueShare
    from armada.scheduling.state import SchedulerState, TokenBucket, UsageHistory

__all__ = [
    "QUEUED",
    "RUNNING",
    "CycleStats",
    "JobDb",
    "JobRequirements",
    "Leases",
    "NodeDb",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "Placement",
    "Preemption",
    "PriorityClass",
    "QueueShare",
    "QueueSpec",
    "Reasons",
    "Rejection",
    "RequirementsError",
    "SchedulerState",
    "SchedulingConfig",
    "SchedulingResult",
    "Taint",
    "TokenBucket",
    "Toleration",
    "UsageHistory",
    "apply_decisions",
    "requirements_from_pod_spec",
    "schedule",
]

# Importing the package (e.g. for its numpy-free config or share report) loads no numpy.
__getattr__ = lazy_exports(
    __name__,
    {
        "PriorityClass": "armada.scheduling.config",
        "SchedulingConfig": "armada.scheduling.config",
        "CycleStats": "armada.scheduling.decisions",
        "Placement": "armada.scheduling.decisions",
        "Leases": "armada.scheduling.decisions",
        "Preemption": "armada.scheduling.decisions",
        "QueueShare": "armada.scheduling.shares",
        "Reasons": "armada.scheduling.decisions",
        "Rejection": "armada.scheduling.decisions",
        "SchedulingResult": "armada.scheduling.decisions",
        "QUEUED": "armada.scheduling.jobdb",
        "RUNNING": "armada.scheduling.jobdb",
        "JobDb": "armada.scheduling.jobdb",
        "NodeDb": "armada.scheduling.nodes",
        "NodeSpec": "armada.scheduling.nodes",
        "Taint": "armada.model.taints",
        "QueueSpec": "armada.scheduling.queues",
        "JobRequirements": "armada.scheduling.requirements",
        "NodeSelectorRequirement": "armada.scheduling.requirements",
        "NodeSelectorTerm": "armada.scheduling.requirements",
        "RequirementsError": "armada.scheduling.requirements",
        "Toleration": "armada.scheduling.requirements",
        "requirements_from_pod_spec": "armada.scheduling.requirements",
        "apply_decisions": "armada.scheduling.schedule",
        "schedule": "armada.scheduling.schedule",
        "SchedulerState": "armada.scheduling.state",
        "TokenBucket": "armada.scheduling.state",
        "UsageHistory": "armada.scheduling.state",
    },
)
