"""Probe jobs: "when would a new job of this queue's typical shape start?"

A queue's typical shape is its most common scheduling key among its queued and running
jobs outside gangs. A probe is one job of that key, submitted now: forecast with the
real jobs (:attr:`ForecastSnapshot.extra_jobs`) it says how long a newcomer would wait.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from armada.scheduling.jobdb import FREE, JobDb
from armada.scheduling.requirements import JobRequirements

#: Prefix of probe job ids: ``~probe~<queue>``.
PROBE_PREFIX = "~probe~"


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
