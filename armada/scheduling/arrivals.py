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


def steady(
    recent: Iterable[JobRequirements], *, now: float, window: float, until: float
) -> list[tuple[float, JobRequirements]]:
    """``(arrival time, job)``: per queue, the groups of jobs submitted together in the last
    ``window`` (a job set's batch, a gang) arriving again one after the other, evenly spaced
    at the queue's rate over the window, up to ``until``."""
    if window <= 0:
        return []
    groups: dict[str, dict[float, list[JobRequirements]]] = {}
    for job in recent:
        if now - window <= job.submitted < now:
            groups.setdefault(job.queue, {}).setdefault(job.submitted, []).append(job)
    out: list[tuple[float, JobRequirements]] = []
    for of_queue in groups.values():
        batches = list(of_queue.values())
        gap = window / len(batches)
        at, k = now + gap / 2, 0
        while at < until:
            out.extend((at, copy_of(job, k // len(batches) + 1, at)) for job in batches[k % len(batches)])
            k += 1
            at += gap
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
