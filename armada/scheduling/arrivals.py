"""Future arrivals for forecasts: the recent past, repeated.

A forecast that knows only the jobs already queued is early whenever new jobs of queues
with a better fair-share standing keep arriving and overtake. :func:`extrapolate` assumes
the workload of the last ``window`` seconds goes on as it was: each job submitted in
``[now - window, now)`` arrives again ``window``, ``2 window``, ... later, up to ``until``.
The copies are simulated like any job but never reported.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from armada.scheduling.requirements import JobRequirements

#: Prefix of the ids (and gang ids) of extrapolated jobs: ``~<repeat>~<original id>``.
ARRIVAL_PREFIX = "~"


def extrapolate(
    recent: Iterable[JobRequirements], *, now: float, window: float, until: float
) -> list[tuple[float, JobRequirements]]:
    """``(arrival time, job)`` for the repeats of the jobs submitted in the last ``window``."""
    if window <= 0:
        return []
    jobs = [job for job in recent if now - window <= job.submitted < now]
    out: list[tuple[float, JobRequirements]] = []
    repeat = 1
    while jobs and now + (repeat - 1) * window < until:
        shift = repeat * window
        for job in jobs:
            at = job.submitted + shift
            if at >= until:
                continue
            out.append((at, copy_of(job, repeat, at)))
        repeat += 1
    out.sort(key=lambda pair: pair[0])
    return out


def copy_of(job: JobRequirements, repeat: int, at: float) -> JobRequirements:
    tag = f"{ARRIVAL_PREFIX}{repeat}{ARRIVAL_PREFIX}"
    gang = f"{tag}{job.gang_id}" if job.gang_id else ""
    return msgspec.structs.replace(job, id=f"{tag}{job.id}", submitted=at, gang_id=gang)


def original_id(job_id: str) -> str:
    """The id of the job an extrapolated one copies (itself for a real job)."""
    if not job_id.startswith(ARRIVAL_PREFIX):
        return job_id
    return job_id.split(ARRIVAL_PREFIX, 2)[2]
