"""One scheduling cycle over every pool: the entry point of the scheduling core."""

from __future__ import annotations

import math
import operator
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence

import numpy as np
import numpy.typing as npt

from armada.scheduling.away import away_passes, fits_away, in_pools_mask
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.context import CycleContext
from armada.scheduling.decisions import (
    CYCLE_LEASE_CAP,
    GLOBAL_RATE_LIMITED,
    NO_NODES,
    CycleStats,
    Leases,
    Reasons,
    Rejection,
    SchedulingResult,
)
from armada.scheduling.figures import count_gangs_scheduled
from armada.scheduling.jobdb import QUEUED, JobDb
from armada.scheduling.placement import explain_misfit
from armada.scheduling.pool import PoolCycle
from armada.scheduling.queues import QueueSpec
from armada.scheduling.shares import QueueShare
from armada.scheduling.state import SchedulerState, TokenBucket, tokens_now

BoolArray = npt.NDArray[np.bool_]


def schedule(
    db: JobDb,
    *,
    queues: Sequence[QueueSpec],
    config: SchedulingConfig,
    state: SchedulerState,
    now: float,
    clock: Callable[[], float] = time.monotonic,
    paused_executors: Collection[str] = (),
    max_leases: int | None = None,
    explain: bool = True,
) -> SchedulingResult:
    """Decide leases, preemptions and rejections for one cycle. Reads ``db``, never changes it.

    ``now`` (seconds, any epoch) drives rate-limit refill and usage decay; ``clock`` is only
    used for the ``maxSchedulingDuration`` budget. Nodes of ``paused_executors`` (behind on
    acknowledging their leases) take no new jobs this cycle, like cordoned nodes: their
    running jobs still count towards fair share. ``max_leases`` caps the cycle's new leases
    (what the executors can take at once): the first jobs of the merged fair-share order get
    them, as under the global rate limit, whose tokens only the leases made are taken from.
    With ``explain`` off (simulations), a pool's turn stops as soon as nothing more can be
    decided: the same decisions, but incomplete reasons and figures for the jobs not reached.
    Apply the result with :func:`apply_decisions` (or by appending events that the service
    feeds back into ``db``).
    """
    started = clock()
    deadline = started + config.max_scheduling_duration if config.max_scheduling_duration > 0 else math.inf
    pools = db.nodes.pool_rows()
    usage = state.usage.decayed(now, config.usage_half_life)
    key_ok, rejected, waiting = _rejected_keys(db, config, pools)
    bucket = tokens_now(
        state.global_bucket, now, config.maximum_scheduling_rate, config.maximum_scheduling_burst
    )
    granted = bucket if max_leases is None else min(bucket, max(0, max_leases))
    ctx = CycleContext(
        db=db,
        config=config,
        clock=clock,
        deadline=deadline,
        global_tokens=granted,
        queue_tokens={
            name: tokens_now(
                state.queue_buckets.get(name),
                now,
                config.maximum_per_queue_scheduling_rate,
                config.maximum_per_queue_scheduling_burst,
            )
            for name in db.queue_names
        },
        taken=np.zeros(len(db.ids), dtype=bool),
        key_ok=key_ok,
        paused_nodes=db.nodes.executor_mask(paused_executors) if paused_executors else None,
        now=now,
        explain=explain,
        preemption_tokens={
            pool: tokens_now(state.preemption_buckets.get(pool), now, limit.maximum_rate, limit.maximum_burst)
            for pool in pools
            if (limit := config.pool_config(pool).fairshare_preemption_rate_limit) is not None
        },
    )
    ctx.reasons.by_key.update(rejected)
    ctx.reasons.by_key.update(waiting)
    if not pools:
        ctx.reasons.cycle = NO_NODES
    rejections = _rejections(db, rejected)
    shares: dict[str, dict[str, QueueShare]] = {}
    for pool, rows in pools.items():
        turn = clock()
        cycle = PoolCycle(ctx, pool, rows, list(queues), usage)
        cycle.run()
        shares[pool] = cycle.state.shares()
        ctx.pool_seconds[pool] = clock() - turn
    for home, away in away_passes(config, pools):
        PoolCycle(ctx, home.name, pools[away], list(queues), usage, away_in=away).run()
    if granted < bucket and ctx.reasons.cycle == GLOBAL_RATE_LIMITED:
        ctx.reasons.cycle = CYCLE_LEASE_CAP
    leases = _leases(ctx)
    by_pool: dict[str, list[npt.NDArray[np.int64]]] = {}
    for lease_rows, lease_pool in zip(ctx.lease_rows, ctx.lease_pools, strict=True):
        by_pool.setdefault(lease_pool, []).append(lease_rows)
    for lease_pool, parts in by_pool.items():
        count_gangs_scheduled(ctx.figures, db, np.concatenate(parts), lease_pool)
    queue_summary, key_summary = _summaries(db, ctx.reasons, ctx.lease_rows, set(rejected))
    return SchedulingResult(
        leases=leases,
        preemptions=ctx.preemptions,
        rejections=rejections,
        reasons=ctx.reasons,
        shares=shares,
        queue_summary=queue_summary,
        key_summary=key_summary,
        stats=CycleStats(
            duration=clock() - started,
            considered=ctx.considered,
            scheduled=len(leases),
            preempted=len(ctx.preemptions),
            rejected=len(rejections),
            stopped=ctx.stopped,
        ),
        figures=ctx.figures,
        pool_seconds=ctx.pool_seconds,
        state=SchedulerState(
            global_bucket=TokenBucket(max(0.0, bucket - (granted - ctx.global_tokens)), now),
            queue_buckets={
                name: TokenBucket(max(0.0, tokens), now) for name, tokens in ctx.queue_tokens.items()
            },
            preemption_buckets={
                pool: TokenBucket(max(0.0, tokens), now) for pool, tokens in ctx.preemption_tokens.items()
            },
            usage=usage.holding(
                {
                    pool: {q: s.actual_share for q, s in by_queue.items() if db.has_queue(q)}
                    for pool, by_queue in shares.items()
                }
            )
            if config.usage_half_life > 0
            else usage,
        ),
    )


def apply_decisions(db: JobDb, result: SchedulingResult) -> None:
    """Apply a cycle's decisions to the job db it read, unchanged since (what the service
    does via the event log)."""
    leases = result.leases
    db.lease_rows(np.array(leases.rows, dtype=np.int64), np.array(leases.nodes, dtype=np.int64), leases.pools)
    db.remove_many({p.job_id for p in result.preemptions} | {r.job_id for r in result.rejections})


def _rejected_keys(
    db: JobDb, config: SchedulingConfig, pools: dict[str, npt.NDArray[np.int64]]
) -> tuple[BoolArray, dict[int, str], dict[int, str]]:
    """Keys that cannot be scheduled this cycle: ``(key_ok, rejected, waiting)``.

    *Rejected*: no live node shape (allocatable less non-Armada use, ignoring current use)
    with matching labels and taints (tolerated by the job, or by its pool's
    ``jobDefaults.tolerations``) could ever hold the job; a node counts as having what its
    pool has of each floating resource, and a job that may run away fits if a node of an away
    pool would hold it (tolerating the away node types). *Waiting*: the job's pools
    have no nodes right now (their executors may be down), which is not final.
    """
    key_ok = np.ones(len(db.keys), dtype=bool)
    rejected: dict[int, str] = {}
    waiting: dict[int, str] = {}
    if not pools:
        return key_ok, rejected, waiting
    nodes = db.nodes
    pool_tolerations = config.default_tolerations_by_pool()
    shape, live, shapes, inverse = nodes.live_shapes(config.floating_by_pool())
    queued = set().union(*(counts.keys() for counts in db.queued_counts))
    for key in sorted(queued):
        info = db.keys.infos[key]
        allowed = [p for p in pools if info.allows_pool(p)]
        request = db.keys.request(key)
        fits = np.zeros(nodes.size, dtype=bool)
        shape_fits: BoolArray = np.logical_and.reduce(shapes >= request, axis=1)  # per distinct shape: cheap
        fits[live[shape_fits[inverse]]] = True
        if not allowed:  # its pools have no nodes (now): it may still go away, or wait
            if not fits_away(db, config, key, pools, fits):
                key_ok[key] = False
                waiting[key] = f"no nodes in pool(s) {', '.join(sorted(info.pools))}"
            continue
        mask = fits
        if len(allowed) < len(pools):
            mask = fits & in_pools_mask(nodes.size, pools, allowed)
        constraints = nodes.admitting(info.node_selector, info.tolerations, info.affinity, pool_tolerations)
        if not (mask & constraints).any() and not fits_away(db, config, key, pools, fits):
            key_ok[key] = False
            candidates = in_pools_mask(nodes.size, pools, allowed)
            reason = explain_misfit(
                shape,
                request=request,
                mask=candidates & constraints,
                names=db.resources.names,
                pool="/".join(allowed),
                constraints=info.describe_constraints(),
            )
            rejected[key] = f"fits no node shape in the cluster: {reason.replace(' free', '')}"
    return key_ok, rejected, waiting


def _rejections(db: JobDb, rejected: dict[int, str]) -> list[Rejection]:
    """The queued jobs of rejected keys."""
    if not rejected:
        return []
    n = len(db.ids)
    keys = db.cols["key"][:n]
    rows = np.flatnonzero((db.cols["state"][:n] == QUEUED) & np.isin(keys, list(rejected)))
    return [Rejection(db.ids[r] or "", rejected[int(keys[r])]) for r in rows.tolist()]


def _leases(ctx: CycleContext) -> Leases:
    if not ctx.lease_rows:
        return Leases()
    rows = np.concatenate(ctx.lease_rows).tolist()
    nodes = np.concatenate(ctx.lease_nodes)
    pools: list[str] = []
    for pool, chunk in zip(ctx.lease_pools, ctx.lease_rows, strict=True):
        pools += [pool] * len(chunk)
    on = nodes.tolist()
    specs = ctx.db.nodes.specs
    executor = {n: spec.executor if (spec := specs[n]) is not None else "" for n in set(on)}
    return Leases(
        job_ids=_pick(ctx.db.ids, rows),  # type: ignore[arg-type]  # leased rows always have ids
        node_ids=_pick(ctx.db.nodes.ids, on),
        pools=pools,
        executors=list(map(executor.__getitem__, on)),
        rows=rows,
        nodes=on,
    )


def _pick(values: list[str], indices: list[int]) -> list[str]:
    """``[values[i] for i in indices]``, several times faster for long lists."""
    if len(indices) == 1:
        return [values[indices[0]]]
    return list(operator.itemgetter(*indices)(values)) if indices else []


def _summaries(
    db: JobDb, reasons: Reasons, lease_rows: list[npt.NDArray[np.int64]], rejected: set[int]
) -> tuple[dict[str, dict[str, int]], dict[int, dict[str, int]]]:
    """Queued jobs left waiting, counted per queue and per key by reason."""
    leased: Counter[tuple[int, int]] = Counter()
    if lease_rows:
        rows = np.concatenate(lease_rows)
        pairs = db.cols["queue"][rows].astype(np.int64) * max(1, len(db.keys)) + db.cols["key"][rows]
        values, counts = np.unique(pairs, return_counts=True)
        for value, count in zip(values.tolist(), counts.tolist(), strict=True):
            leased[divmod(value, max(1, len(db.keys)))] += count
    by_queue: dict[str, dict[str, int]] = {}
    by_key: dict[int, dict[str, int]] = {}
    for q, counts_by_key in enumerate(db.queued_counts):
        name = db.queue_names[q]
        for key, count in counts_by_key.items():
            waiting = count - leased[(q, key)]
            if waiting <= 0 or key in rejected:
                continue
            reason = reasons.for_key(name, key)
            queue_reasons = by_queue.setdefault(name, {})
            queue_reasons[reason] = queue_reasons.get(reason, 0) + waiting
            key_reasons = by_key.setdefault(key, {})
            key_reasons[reason] = key_reasons.get(reason, 0) + waiting
    return by_queue, by_key
