"""Probe jobs: "when would a new job of this queue's typical shape start?"

A queue's typical shape is its most common scheduling key among its queued and running
jobs outside gangs. A probe is one job of that key, submitted now: forecast with the
real jobs (:attr:`ForecastSnapshot.extra_jobs`) it says how long a newcomer would wait.
Run for :data:`PROBE_RUNTIME`, no time, it takes no room from the real jobs it is forecast
with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from armada.scheduling.calibration import Calibration
from armada.scheduling.forecast import DEFAULT_HORIZON, Draws, ForecastSnapshot, JobForecast, forecast
from armada.scheduling.jobdb import FREE, JobDb
from armada.scheduling.requirements import JobRequirements
from armada.scheduling.runtimes import RuntimeEstimate

#: Prefix of probe job ids: ``~probe~<queue>``.
PROBE_PREFIX = "~probe~"
#: A probe's runtime: it ends as it starts. Its basis is empty: an end without one makes no
#: room in a forecast's bases (the room was there before the probe took it).
PROBE_RUNTIME = RuntimeEstimate(0.0, 0.0, 0.0, "")


class Probe(NamedTuple):
    job: JobRequirements
    #: The shape in words (``cpu=1 memory=4Gi armada-default``).
    shape: str


def typical_jobs(db: JobDb, now: float) -> dict[str, Probe]:
    """Queue -> a probe job of its typical shape (queues with no job outside gangs have none)."""
    n = len(db.ids)
    live = db.cols["state"][:n] != FREE
    queues = db.cols["queue"][:n][live].astype(np.int64)
    keys = db.cols["key"][:n][live].astype(np.int64)
    if not len(keys):
        return {}
    width = max(1, len(db.keys))
    pairs, counts = np.unique(queues * width + keys, return_counts=True)
    best: dict[int, tuple[int, int]] = {}
    for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
        queue, key = divmod(pair, width)
        if db.keys.infos[key].gang_cardinality:
            continue
        if queue not in best or count > best[queue][1]:
            best[queue] = (key, count)
    out: dict[str, Probe] = {}
    for queue, (key, _) in sorted(best.items()):
        info = db.keys.infos[key]
        name = db.queue_names[queue]
        job = JobRequirements(
            id=f"{PROBE_PREFIX}{name}",
            queue=name,
            requests=dict(info.requests),
            priority_class_name=info.priority_class,
            submitted=now,
            node_selector=dict(info.node_selector),
            tolerations=info.tolerations,
            affinity=info.affinity,
            pools=tuple(sorted(info.pools)),
        )
        out[name] = Probe(job, info.describe())
    return out


def forecast_with_probes(
    snapshot: ForecastSnapshot,
    estimates: Mapping[str, RuntimeEstimate],
    default: RuntimeEstimate,
    horizon: float = DEFAULT_HORIZON,
    *,
    calibration: Calibration | None = None,
    draws: Draws = Draws.RUNNING,
) -> tuple[dict[str, JobForecast], dict[str, tuple[Probe, JobForecast]]]:
    """The forecasts of the queued jobs (and ``extra_jobs``) and, per queue, its probe's.

    One simulation for both: each probe queues behind every job of its queue and runs for
    :data:`PROBE_RUNTIME`, no time, so it takes no room from a real job. A second simulation
    for the probes alone would cost as much as the first: a probe submitted now starts only
    once its queue's backlog has."""
    typical = typical_jobs(snapshot.db, snapshot.now)
    with_probes = dataclasses.replace(
        snapshot, extra_jobs=[*snapshot.extra_jobs, *(probe.job for probe in typical.values())]
    )
    runtimes = {**estimates, **{probe.job.id: PROBE_RUNTIME for probe in typical.values()}}
    jobs = forecast(with_probes, runtimes, default, horizon, calibration=calibration, draws=draws)
    return jobs, {queue: (probe, jobs.pop(probe.job.id)) for queue, probe in typical.items()}
