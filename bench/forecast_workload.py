"""The generative process of ``bench/forecast.py``'s workload, one job set at a time.

Shared by the replay (:meth:`bench.forecast.Replay.workload`) and the ideal forecaster
(:mod:`bench.forecast_ideal`), which draws fresh futures from the same process. A job set's
median runtime is lognormal (median :data:`SET_MEDIAN`, sigma :data:`SET_SIGMA`, clipped to
:data:`CLIP`); 30% of sets carry a hint (the median times lognormal noise sigma
:data:`HINT_SIGMA`); each member runs the median times lognormal(0, :data:`WITHIN_SIGMA`),
gang members exactly the median. Burst jobs are each lognormal(:data:`BURST_MEDIAN`,
:data:`BURST_SIGMA`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist

from armada.scheduling import JobRequirements
from armada.scheduling.config import PREEMPTIBLE_PRIORITY_CLASS

GI = 2**30
QUEUE_NAMES = ("alpha", "beta", "gamma")
QUEUE_MIX = (3, 2, 2)
SET_MEDIAN, SET_SIGMA, CLIP = 900.0, 1.0, (60.0, 8 * 3600.0)
HINT_SHARE, HINT_SIGMA = 0.3, 0.2
WITHIN_SIGMA = 0.3
GANG_SHARE, GANG_SIZE = 0.1, 4
BURST_MEDIAN, BURST_SIGMA = 600.0, 0.5
BURST_SET = "gamma/burst"


@dataclass
class Job:
    requirements: JobRequirements
    runtime: float
    job_set: str
    hint: float | None


#: A job set's work (cpu-seconds) the arrival rate assumes: 5 jobs of 2.5 cpus for 1,200 s.
ASSUMED_SET_WORK = 5 * 2.5 * 1200


def set_rate(load: float, capacity: int, *, true_work: bool = False) -> float:
    """Job sets per second at ``load`` of ``capacity`` cpus: by :data:`ASSUMED_SET_WORK`
    (the workload's default), or with ``true_work`` by :func:`mean_set_work`."""
    return load * capacity / (mean_set_work() if true_work else ASSUMED_SET_WORK)


def mean_set_work() -> float:
    """The expected cpu-seconds of a job set drawn by :func:`job_set` (~17,500: the default
    rate's load is ~1.17 times the nominal one)."""
    normal = NormalDist()
    mu, sigma = math.log(SET_MEDIAN), SET_SIGMA
    low, high = (math.log(bound) for bound in CLIP)
    # E[min(high, max(low, X))] for X lognormal(mu, sigma).
    inside = normal.cdf((high - mu) / sigma - sigma) - normal.cdf((low - mu) / sigma - sigma)
    median = math.exp(mu + sigma**2 / 2) * inside
    median += CLIP[0] * normal.cdf((low - mu) / sigma) + CLIP[1] * normal.cdf((mu - high) / sigma)
    alone = 5 * (1 + 2 + 4) / 3 * math.exp(WITHIN_SIGMA**2 / 2)  # 1-9 jobs of 1, 2 or 4 cpus
    return median * ((1 - GANG_SHARE) * alone + GANG_SHARE * GANG_SIZE * 2)


def job_set(rng: random.Random, prefix: str, number: int, at: float) -> list[Job]:
    """The jobs of job set ``number`` arriving at ``at`` (ids ``<prefix><number>-<i>``)."""
    queue = rng.choices(QUEUE_NAMES, weights=QUEUE_MIX)[0]
    median = min(CLIP[1], max(CLIP[0], rng.lognormvariate(math.log(SET_MEDIAN), SET_SIGMA)))
    hint = median * rng.lognormvariate(0, HINT_SIGMA) if rng.random() < HINT_SHARE else None
    gang = rng.random() < GANG_SHARE
    size = GANG_SIZE if gang else rng.randint(1, 9)
    cpu = 2 if gang else rng.choice([1, 2, 4])
    jobs = []
    for i in range(size):
        requests = {"cpu": cpu * 1000, "memory": cpu * 2 * GI}
        gang_fields = {"gang_id": f"g{prefix}{number}", "gang_cardinality": size} if gang else {}
        job_id = f"{prefix}{number}-{i}"
        req = JobRequirements(id=job_id, queue=queue, requests=requests, submitted=at, **gang_fields)  # type: ignore[arg-type]
        runtime = median * (1.0 if gang else rng.lognormvariate(0, WITHIN_SIGMA))
        jobs.append(Job(req, runtime, f"{queue}/set{prefix}{number}", hint))
    return jobs


def burst(rng: random.Random, prefix: str, count: int, at: float) -> list[Job]:
    """The preemptible burst: ``count`` one-cpu jobs of queue gamma arriving at ``at``."""
    return [
        Job(
            JobRequirements(
                id=f"{prefix}burst-{i}",
                queue="gamma",
                requests={"cpu": 1000, "memory": 2 * GI},
                priority_class_name=PREEMPTIBLE_PRIORITY_CLASS,
                submitted=at,
            ),
            rng.lognormvariate(math.log(BURST_MEDIAN), BURST_SIGMA),
            BURST_SET,
            None,
        )
        for i in range(count)
    ]
