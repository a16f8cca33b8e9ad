"""The figures a replay is judged by, computed the same way for the recorded log and a replay.

Per queue: wait from submission to the first lease (a job never started in the window
counts the time it waited until the window's end), preemptions, the resource-seconds its
lost runs held, and per pool its share (its dominant share of the pool's capacity-seconds)
beside its fair share, both over the times some job waited: when nothing waits, every
queue has all it asks for, and a share says nothing about fairness. Per pool: utilisation,
the resource-seconds held over the capacity-seconds the executors offered.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec
import numpy as np

from armada.model.quantities import resolution_of
from armada.scheduling.replay import NodeChange, TimelineItem
from armada.services.simulation.recorded import Outcome


class QueueFigures(msgspec.Struct, rename="camel", frozen=True):
    jobs: int
    started: int
    mean_wait: float
    p50_wait: float
    p90_wait: float
    preemptions: int
    #: resource -> resource-seconds (cores, bytes, GPUs…) held by runs whose work was lost.
    lost_resource_seconds: dict[str, float]
    #: pool -> mean dominant share of the pool's capacity while some job waited.
    share: dict[str, float]
    #: pool -> mean demand-adjusted fair share as the scheduling core computed it while some job
    #: waited (a replay's own; the recorded column shows the replay-with-current-settings').
    fair_share: dict[str, float]


class PoolFigures(msgspec.Struct, rename="camel", frozen=True):
    #: resource -> resource-seconds held / capacity-seconds offered.
    utilisation: dict[str, float]


class Figures(msgspec.Struct, rename="camel", frozen=True):
    queues: dict[str, QueueFigures]
    pools: dict[str, PoolFigures]


class Busy:
    """The times some job waited (submitted, not yet started): the fair-share contest. A queue's
    share counts only then (when nothing waits, any share is fair)."""

    def __init__(self, outcomes: Iterable[Outcome], until: float) -> None:
        edges: list[tuple[float, int]] = []
        for o in outcomes:
            started = min(o.started if o.started is not None else until, until)
            if started > o.submitted:
                edges += [(o.submitted, 1), (started, -1)]
        edges.sort()
        starts, ends, waiting = [], [], 0
        for t, delta in edges:
            if waiting == 0 and delta > 0:
                starts.append(t)
            waiting += delta
            if waiting == 0:
                ends.append(t)
        self.starts = np.array(starts, dtype=float)
        self.ends = np.array(ends, dtype=float)
        self.before = np.concatenate(([0.0], np.cumsum(self.ends - self.starts)))

    def seconds(self, a: float, b: float) -> float:
        """How long within ``[a, b]`` some job waited."""
        return max(0.0, self._upto(b) - self._upto(a))

    def _upto(self, x: float) -> float:
        i = int(np.searchsorted(self.starts, x, side="right")) - 1
        if i < 0:
            return 0.0
        return float(self.before[i] + min(x, self.ends[i]) - self.starts[i])


def capacity_seconds(
    timeline: Sequence[tuple[float, TimelineItem]],
    since: float,
    until: float,
    span: Callable[[float, float], float],
) -> dict[str, dict[str, float]]:
    """pool -> resource -> capacity-seconds (allocatable less non-Armada use) over the window,
    counting ``span(start, end)`` seconds of each stretch."""
    offered: dict[str, tuple[str, dict[str, float]]] = {}  # executor -> (pool, resource totals)
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    at = since
    changes = [(t, item) for t, item in timeline if isinstance(item, NodeChange)]
    for when, change in [*changes, (until, None)]:
        t = min(max(when, since), until)
        seconds = span(at, t)
        for pool, held in offered.values():
            for resource, amount in held.items():
                out[pool][resource] += amount * seconds
        at = t
        if change is None:
            break
        totals: dict[str, float] = defaultdict(float)
        for node in change.nodes:
            for resource, units in node.allocatable.items():
                totals[resource] += _natural(resource, units - node.non_armada_allocated.get(resource, 0))
        offered[change.executor] = (change.nodes[0].pool if change.nodes else "", totals)
    return {pool: dict(by_resource) for pool, by_resource in out.items()}


def figures(
    outcomes: Mapping[str, Outcome],
    timeline: Sequence[tuple[float, TimelineItem]],
    fair_share: Mapping[str, Mapping[str, float]],
    dominant: Sequence[str],
    window: tuple[float, float],
) -> Figures:
    """The figures of ``outcomes`` with the executors' nodes of ``timeline`` over ``window``."""
    since, until = window
    busy = Busy(outcomes.values(), until)
    capacity = capacity_seconds(timeline, since, until, lambda a, b: b - a)
    contested = capacity_seconds(timeline, since, until, busy.seconds)
    held: dict[str, dict[str, dict[str, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float))
    )
    held_busy: dict[str, dict[str, dict[str, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float))
    )
    by_queue: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes.values():
        by_queue[outcome.queue].append(outcome)
        for run in outcome.runs:
            end = min(run.end if run.end is not None else until, until)
            seconds, contest = end - run.start, busy.seconds(run.start, end)
            for resource, units in outcome.requests.items():
                amount = _natural(resource, units)
                held[run.pool][outcome.queue][resource] += amount * seconds
                held_busy[run.pool][outcome.queue][resource] += amount * contest
    queues = {
        name: _queue(name, jobs, held_busy, contested, fair_share, dominant, until)
        for name, jobs in sorted(by_queue.items())
    }
    pools = {}
    for pool, offered in sorted(capacity.items()):
        used: dict[str, float] = defaultdict(float)
        for by_resource in held.get(pool, {}).values():
            for resource, amount in by_resource.items():
                used[resource] += amount
        pools[pool] = PoolFigures(
            {r: used.get(r, 0.0) / total for r, total in sorted(offered.items()) if total > 0 and r in used}
        )
    return Figures(queues=queues, pools=pools)


def _queue(
    name: str,
    jobs: list[Outcome],
    held: Mapping[str, Mapping[str, Mapping[str, float]]],
    capacity: Mapping[str, Mapping[str, float]],
    fair_share: Mapping[str, Mapping[str, float]],
    dominant: Sequence[str],
    until: float,
) -> QueueFigures:
    waits = np.array(
        [(o.started if o.started is not None else until) - o.submitted for o in jobs], dtype=float
    )
    lost: dict[str, float] = defaultdict(float)
    for outcome in jobs:
        for run in outcome.runs:
            if run.lost and run.end is not None:
                for resource, units in outcome.requests.items():
                    lost[resource] += _natural(resource, units) * (run.end - run.start)
    share = {}
    for pool, offered in capacity.items():
        mine = held.get(pool, {}).get(name, {})
        ratios = [mine.get(r, 0.0) / offered[r] for r in dominant if offered.get(r, 0) > 0]
        share[pool] = max(ratios, default=0.0)
    return QueueFigures(
        jobs=len(jobs),
        started=sum(1 for o in jobs if o.started is not None),
        mean_wait=float(waits.mean()) if len(waits) else 0.0,
        p50_wait=float(np.percentile(waits, 50)) if len(waits) else 0.0,
        p90_wait=float(np.percentile(waits, 90)) if len(waits) else 0.0,
        preemptions=sum(1 for o in jobs if o.preempted),
        lost_resource_seconds=dict(sorted(lost.items())),
        share=share,
        fair_share={pool: by_queue.get(name, 0.0) for pool, by_queue in fair_share.items()},
    )


def _natural(resource: str, units: int) -> float:
    """Integer units as the resource's natural unit (cores, bytes, GPUs)."""
    return float(units * resolution_of(resource))
