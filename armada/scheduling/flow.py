"""Future arrivals for forecasts as each queue's steady flow of demand.

Jobs submitted later by a queue under its fair share overtake the jobs already waiting in
the others. :func:`steady_flow` reserves the capacity they will take without guessing
particular jobs: each queue's work submitted in the last ``window`` seconds (the sum of
its jobs' sizes times their expected runtimes) goes on arriving at the same rate, as jobs
of the queue's typical shape (:mod:`.probes`) evenly spaced at the rate its jobs came,
each running long enough that the work matches. No bursts: the expected demand, smoothed.
The synthetic jobs are simulated like any job but never reported.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import msgspec

from armada.scheduling.arrivals import ARRIVAL_PREFIX
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.runtimes import RuntimeEstimate

#: Basis of the synthetic jobs' runtimes.
FLOW_BASIS = "expected arrivals"


@dataclass(frozen=True)
class Submitted:
    """A job submitted recently: its queue, when, its requests and its expected runtime."""

    queue: str
    at: float
    requests: Mapping[str, int]
    runtime: float


def flow_id(queue: str) -> str:
    """The id under which the caller finds the runtime of ``queue``'s synthetic jobs
    (:func:`~armada.scheduling.arrivals.original_id` of each of them)."""
    return f"{ARRIVAL_PREFIX}flow{ARRIVAL_PREFIX}{queue}"


def size(requests: Mapping[str, int], typical: Mapping[str, int]) -> float:
    """How many typical jobs ``requests`` amount to: the largest ratio over the typical
    shape's resources (1 when the shape requests nothing)."""
    ratios = [requests.get(name, 0) / amount for name, amount in typical.items() if amount > 0]
    return max(ratios, default=1.0) or 1.0


def steady_flow(
    recent: Iterable[Submitted],
    typical: Mapping[str, JobRequirements],
    *,
    now: float,
    window: float,
    until: float,
) -> tuple[list[tuple[float, JobRequirements]], dict[str, RuntimeEstimate]]:
    """``(arrival time, job)`` of each queue's flow from ``now`` to ``until``, and the
    runtime of each queue's synthetic jobs by :func:`flow_id`.

    A queue that submitted ``n`` jobs of total work ``w`` (typical-job seconds) in
    ``[now - window, now)`` gets one job of its ``typical`` shape every ``window / n``
    seconds, the first half an interval from now, each running ``w / n`` seconds.
    Queues without a typical job get none.
    """
    if window <= 0:
        return [], {}
    count: dict[str, int] = defaultdict(int)
    work: dict[str, float] = defaultdict(float)
    for job in recent:
        shape = typical.get(job.queue)
        if shape is None or not now - window <= job.at < now:
            continue
        count[job.queue] += 1
        work[job.queue] += size(job.requests, shape.requests) * job.runtime
    arrivals: list[tuple[float, JobRequirements]] = []
    runtimes: dict[str, RuntimeEstimate] = {}
    for queue, n in sorted(count.items()):
        runtime = work[queue] / n
        runtimes[flow_id(queue)] = RuntimeEstimate(runtime, runtime, runtime, FLOW_BASIS)
        every = window / n
        last = math.ceil((until - now) / every - 0.5)
        for k in range(max(0, last)):
            at = now + (k + 0.5) * every
            job_id = f"{ARRIVAL_PREFIX}{k}{ARRIVAL_PREFIX}{flow_id(queue)}"
            arrivals.append((at, msgspec.structs.replace(typical[queue], id=job_id, submitted=at)))
    arrivals.sort(key=lambda pair: pair[0])
    return arrivals, runtimes
