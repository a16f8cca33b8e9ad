"""Plain-text renderings of the scheduling reports, for people at a terminal."""

from __future__ import annotations

from datetime import datetime

from armada.model.wire.retry_history import history_lines
from armada.reports.wire import JobReport, KeyReport, QueueReport, SchedulingReport
from armada.scheduling.shares import QueueShare

SHARE_HEADER = f"{'pool':<16} {'queue':<24} {'fair':>7} {'adjusted':>9} {'actual':>7} {'demand':>7}"


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "never"


def _share_line(pool: str, queue: str, share: QueueShare) -> str:
    return (
        f"{pool:<16} {queue:<24} {share.fair_share:>7.3f} {share.adjusted_fair_share:>9.3f} "
        f"{share.actual_share:>7.3f} {share.demand:>7.3f}"
    )


def _key(key: KeyReport) -> list[str]:
    requests = ", ".join(f"{name}={value}" for name, value in sorted(key.requests.items()))
    constraints = [f"{k}={v}" for k, v in sorted(key.node_selector.items())]
    if key.node_affinity:
        constraints.append("node affinity")
    if key.tolerations:
        constraints.append(f"{key.tolerations} tolerations")
    if key.pools:
        constraints.append(f"pools {','.join(key.pools)}")
    if key.gang_cardinality:
        constraints.append(f"gang of {key.gang_cardinality}")
    extra = f"; {', '.join(constraints)}" if constraints else ""
    return [
        f"  key {key.key}: {key.queued} queued, {key.priority_class}, {requests}{extra}",
        f"    why: {key.reason}",
    ]


def scheduling(report: SchedulingReport) -> str:
    if not report.cycles:
        return "No scheduling cycle recorded yet (is a scheduler running?)."
    lines: list[str] = []
    latest = report.cycles[0]
    lines.append(f"Last cycle {_when(latest.finished)}: {latest.duration_seconds * 1000:.1f} ms")
    lines.append(
        f"{'finished':<24} {'ms':>8} {'considered':>10} {'scheduled':>9} {'preempted':>9} {'rejected':>8}"
    )
    for cycle in report.cycles:
        lines.append(
            f"{_when(cycle.finished):<24} {cycle.duration_seconds * 1000:>8.1f} {cycle.considered:>10} "
            f"{cycle.scheduled:>9} {cycle.preempted:>9} {cycle.rejected:>8}"
            + (f"  (latest of {cycle.repeats} idle cycles)" if cycle.repeats > 1 else "")
            + (f"  stopped: {cycle.stopped}" if cycle.stopped else "")
        )
    lines += ["", "Shares in the last cycle:", SHARE_HEADER]
    for pool, part in sorted(latest.pools.items()):
        lines += [_share_line(pool, queue, share) for queue, share in sorted(part.queues.items())]
    if latest.top_unschedulable_reasons:
        lines += ["", "Why queued jobs wait:"]
        lines += [f"{r.jobs:>8}  {r.reason}" for r in latest.top_unschedulable_reasons]
    return "\n".join(lines + _cordons(report))


UNSAID = "(no reason given)"


def _cordons(report: SchedulingReport) -> list[str]:
    """What operators took out of scheduling, and why."""
    lines: list[str] = []
    if report.cordoned_executors:
        lines += ["", "Cordoned executors (no new leases):"]
        lines += [f"  {name}: {reason or UNSAID}" for name, reason in report.cordoned_executors.items()]
    if report.cordoned_nodes:
        lines += ["", "Cordoned nodes:"]
        lines += [f"  {name}: {reason or UNSAID}" for name, reason in report.cordoned_nodes.items()]
    return lines


def queue(report: QueueReport) -> str:
    state = "cordoned" if report.cordoned else "open"
    lines = [
        f"Queue {report.queue} ({state}, priority factor {report.priority_factor:g}): {report.queued} queued",
        f"Reasons as of the cycle at {_when(report.cycle_finished)}",
    ]
    if report.pools:
        lines += [SHARE_HEADER, *(_share_line(p, report.queue, s) for p, s in sorted(report.pools.items()))]
    for priority_class, limits in sorted(report.limits.items()):
        fractions = ", ".join(f"{name} {fraction:g}" for name, fraction in sorted(limits.items()))
        lines.append(f"Limit {priority_class}: {fractions}")
    lines += [f"Limit hit: {reason}" for reason in report.limits_hit]
    if report.keys:
        lines.append("Queued jobs by scheduling key:")
        for key in report.keys:
            lines += _key(key)
    return "\n".join(lines)


def job(report: JobReport) -> str:
    lines = [f"Job {report.job_id} in queue {report.queue}, job set {report.job_set_id}: {report.state}"]
    if report.position is not None:
        lines.append(f"Position {report.position} of {report.queued_in_queue} queued in {report.queue}")
    lines.append(f"Reason: {report.reason}")
    if report.key is not None:
        lines.append(_key(report.key)[0])
    if report.lease is not None:
        lease = report.lease
        lines.append(
            f"Latest run {lease.run_id}: {lease.state} on cluster {lease.cluster}, node {lease.node}, "
            f"leased {_when(lease.leased)}, started {_when(lease.started)}"
        )
    if report.retries is not None and report.retries.eventful:
        lines += history_lines(report.retries)
    return "\n".join(lines)
