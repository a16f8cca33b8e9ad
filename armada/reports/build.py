"""Build the three scheduling reports from the cycle history, the scheduler's in-memory
state and (for one job) its view row: no scan of the jobs table, whatever is queued."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np

from armada.eventstore.store import EventStore
from armada.model.errors import NotFound
from armada.model.lifecycle import JobState
from armada.model.quantities import format_units
from armada.model.wire.forecasts import JobForecastInfo
from armada.reports import render
from armada.reports.wire import (
    CycleReport,
    JobReport,
    KeyReport,
    LeaseReport,
    NewJobForecast,
    PoolCycle,
    QueueReport,
    ReasonCount,
    SchedulingReport,
)
from armada.scheduler.cluster_state import ClusterState
from armada.scheduler.history import CycleHistory, CycleRecord
from armada.scheduling import QUEUED, JobDb
from armada.services import queries

NO_CYCLE = "no scheduling cycle recorded yet (is a scheduler running?)"
NEXT_CYCLE = "submitted after the last cycle: waiting for the next one"


def scheduling_report(
    history: CycleHistory,
    state: ClusterState | None = None,
    new_jobs: Mapping[str, tuple[str, JobForecastInfo]] | None = None,
) -> SchedulingReport:
    """The cycles, and (given the state) what operators cordoned: the scheduler leaves it out;
    ``new_jobs``: per queue, when a new job of its typical shape would start."""
    report = SchedulingReport(cycles=[_cycle(record) for record in reversed(list(history))])
    for queue, (shape, forecast) in (new_jobs or {}).items():
        report.new_jobs[queue] = NewJobForecast(shape=shape, forecast=forecast)
    if state is not None:
        report.cordoned_executors = dict(sorted(state.cordoned_executors.items()))
        report.cordoned_nodes = {
            f"{executor}/{node}": reason
            for executor, nodes in sorted(state.cordoned_nodes.items())
            for node, reason in sorted(nodes.items())
        }
    report.report = render.scheduling(report)
    return report


def _cycle(record: CycleRecord) -> CycleReport:
    stats = record.stats
    pools = {
        pool: PoolCycle(
            scheduled=sum(n for (_, p, _, _), n in record.scheduled.items() if p == pool),
            preempted=sum(n for (_, p, _, _), n in record.preempted.items() if p == pool),
            queues=shares,
        )
        for pool, shares in record.shares.items()
    }
    return CycleReport(
        finished=record.finished,
        duration_seconds=stats.duration,
        considered=stats.considered,
        scheduled=stats.scheduled,
        preempted=stats.preempted,
        rejected=stats.rejected,
        stopped=stats.stopped,
        repeats=record.repeats,
        pools=pools,
        top_unschedulable_reasons=[ReasonCount(reason=r, jobs=n) for r, n in record.top_reasons()],
    )


def key_report(db: JobDb, key: int, queue: str, queued: int, record: CycleRecord | None) -> KeyReport:
    info = db.keys.infos[key]
    return KeyReport(
        key=key,
        priority_class=info.priority_class,
        requests={name: format_units(name, units) for name, units in info.requests.items()},
        node_selector=dict(info.node_selector),
        tolerations=len(info.tolerations),
        node_affinity=bool(info.affinity),
        pools=sorted(info.pools),
        gang_cardinality=info.gang_cardinality,
        queued=queued,
        reason=record.reasons.for_key(queue, key) if record else NO_CYCLE,
    )


def queue_report(
    state: ClusterState,
    history: CycleHistory,
    name: str,
    new_job: tuple[str, JobForecastInfo] | None = None,
) -> QueueReport:
    spec = state.queues.get(name)
    if spec is None:
        raise NotFound(f"queue {name!r} does not exist", field="name")
    record, db = history.last, state.jobs
    counts = db.queued_counts[db.queue_index(name)] if name in db.queue_names else {}
    limits_hit: list[str] = []
    if record is not None:
        reasons = record.reasons
        limits_hit = sorted(set(reasons.by_queue_key.get(name, {}).values()))
        if name in reasons.by_queue:
            limits_hit.append(reasons.by_queue[name])
    keys = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    report = QueueReport(
        queue=name,
        priority_factor=spec.priority_factor,
        cordoned=spec.cordoned,
        queued=sum(counts.values()),
        pools={pool: shares[name] for pool, shares in record.shares.items() if name in shares}
        if record
        else {},
        limits=spec.resource_limits_by_priority_class_name,
        limits_hit=limits_hit,
        keys=[key_report(db, key, name, count, record) for key, count in keys],
        cycle_finished=record.finished if record else None,
        new_job=NewJobForecast(shape=new_job[0], forecast=new_job[1]) if new_job else None,
    )
    report.report = render.queue(report)
    return report


async def job_report(
    store: EventStore,
    state: ClusterState,
    history: CycleHistory,
    job_id: str,
    forecast: JobForecastInfo | None = None,
) -> JobReport:
    details = (await queries.job_details(store, [job_id], expand_spec=False, expand_runs=True)).get(job_id)
    if details is None:
        raise NotFound(f"job {job_id!r} does not exist", field="jobId")
    run = details.job_runs[-1] if details.job_runs else None
    lease = (
        LeaseReport(
            run_id=run.run_id,
            cluster=run.cluster,
            node=run.node,
            state=run.state,
            leased=run.leased_ts,
            started=run.started_ts,
        )
        if run
        else None
    )
    report = JobReport(
        job_id=job_id,
        queue=details.queue,
        job_set_id=details.jobset,
        state=details.state,
        position=None,
        queued_in_queue=None,
        reason="",
        key=None,
        lease=lease,
        retries=details.retry_history,
        forecast=forecast,
        cycle_finished=history.last.finished if history.last else None,
    )
    db = state.jobs
    if details.state == JobState.QUEUED.value and job_id in db and db.state(job_id) == QUEUED:
        _explain_queued(report, db, history.last, details.submitted_ts)
    elif details.state == JobState.QUEUED.value and job_id in state.pending:
        report.reason = "leased by the last cycle; the lease is being written"
    elif details.state == JobState.QUEUED.value:
        report.reason = "not yet seen by the scheduler"
    elif lease is not None and not JobState(details.state).terminal:
        report.reason = f"leased to cluster {lease.cluster}, node {lease.node}"
    else:
        report.reason = await _final_reason(store, job_id, details.state, details.cancel_reason)
    report.report = render.job(report)
    return report


def _explain_queued(
    report: JobReport, db: JobDb, record: CycleRecord | None, submitted: datetime | None
) -> None:
    """Position, key and reason of a queued job (the reason is its key's, or its gang's)."""
    row = db.row(report.job_id)
    queue = int(db.cols["queue"][row])
    order = db.queued_rows(queue)
    hits = np.flatnonzero(order == row)
    report.position = int(hits[0]) + 1 if len(hits) else None
    report.queued_in_queue = len(order)
    key = int(db.cols["key"][row])
    report.key = key_report(db, key, report.queue, db.queued_counts[queue].get(key, 0), record)
    if record is None:
        report.reason = NO_CYCLE
    elif submitted is not None and submitted > record.finished:
        report.reason = NEXT_CYCLE
    else:
        report.reason = record.reasons.for_job(db, report.job_id)


async def _final_reason(store: EventStore, job_id: str, state: str, cancel_reason: str) -> str:
    if state == JobState.FAILED.value:
        return (await queries.job_errors(store, [job_id])).get(job_id, "") or "failed"
    if state == JobState.CANCELLED.value and cancel_reason:
        return f"cancelled: {cancel_reason}"
    return state.lower()
