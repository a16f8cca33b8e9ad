"""Leases decided by the leader and not yet in the log: held in the job db until they are.

Scheduling cycles overlap (see :mod:`armada.scheduler.loop`): cycle N+1 is computed
while cycle N's decisions are being appended. So that N+1 neither leases N's jobs again nor
places work on the capacity N just took, N's leases are *held* in the job db as soon as N
has decided: each job runs on its node there (its resources counted on the node and its
queue), exactly as if its ``leased`` event had been applied. Nothing else of the state
changes: no run exists yet, so executors are not told, and a lease call cannot hand out a
lease that might never commit.

A held lease ends in one of three ways:

- its ``leased`` event comes back through the log (:meth:`PendingLeases.confirm`, called by
  :class:`~armada.scheduler.cluster_state.ClusterState`): the job db already holds it, only the
  run is added;
- the job finishes meanwhile (cancelled, say): it leaves the job db as any running job does;
- the append ends without it (it failed, or the optimistic re-check dropped the lease):
  the scheduler :meth:`releases <PendingLeases.release>` it and the job is queued again.

Until one of those, a held lease keeps its capacity even if other events for the job are
applied: releasing it earlier would let a later cycle place work where the append may still
commit this one.
"""

from __future__ import annotations

from collections.abc import Iterable

from armada.scheduling import QUEUED, JobDb, Leases


class PendingLeases:
    """Job id → node key of the leases held in the job db ahead of their events."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._held

    def hold(self, jobs: JobDb, leases: Leases) -> list[str]:
        """Hold ``leases`` in ``jobs``; return the ids of the jobs held.

        A job no longer queued there (it finished, or was leased, while the cycle was being
        decided) is skipped: its lease is left to the append's re-check.
        """
        held: list[str] = []
        for job_id, node, pool in zip(leases.job_ids, leases.node_ids, leases.pools, strict=True):
            if job_id in jobs and job_id not in self._held and jobs.state(job_id) == QUEUED:
                jobs.lease(job_id, node, pool)
                self._held[job_id] = node
                held.append(job_id)
        return held

    def confirm(self, jobs: JobDb, job_id: str, node: str, pool: str) -> bool:
        """The ``leased`` event of ``job_id`` is being applied: True if ``jobs`` already holds it.

        A lease onto another node than the held one (not made by this process) replaces it.
        """
        held = self._held.pop(job_id, None)
        if held is None:
            return False
        if held != node:
            jobs.requeue(job_id)
            jobs.lease(job_id, node, pool)
        return True

    def forget(self, job_id: str) -> None:
        """The job left the job db (it finished): nothing is held for it any more."""
        self._held.pop(job_id, None)

    def release(self, jobs: JobDb, job_ids: Iterable[str]) -> int:
        """Queue again those of ``job_ids`` still held (their append ended without them)."""
        released = 0
        for job_id in job_ids:
            if self._held.pop(job_id, None) is not None and job_id in jobs:
                jobs.requeue(job_id)
                released += 1
        return released
