"""The scheduler's count of runs leased and not yet started (``ClusterState.leased_runs``),
which bounds the leases in flight: up when a run is leased, down when it is reported pending
or running or ends before that, never twice for one run."""

from __future__ import annotations

from datetime import UTC, datetime

from armada.model import events as ev
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling import SchedulingConfig
from tests.factories import make_job, submission

START = datetime(2026, 1, 1, tzinfo=UTC)


def leased(state: ClusterState, seq: int, run_id: str) -> dict[str, str]:
    """Submit a job and lease it as ``run_id``; the run's identifying fields."""
    job = make_job(queue="q", cpu="1")
    for offset, event in enumerate(submission(job, START)):
        state.apply(seq + offset, event)
    ids = {"queue": "q", "job_set_id": job.job_set_id, "job_id": job.id, "run_id": run_id}
    state.apply(seq + 2, ev.JobLeased(**ids, cluster_id="c", node_id="n1", pool="default", created=START))
    return ids


def test_leased_runs_count_until_started_or_ended() -> None:
    state = ClusterState(SchedulingConfig())
    nodes = [ev.ExecutorNode(name="n1", allocatable={"cpu": 8000})]
    state.apply(1, ev.ExecutorReported(executor_id="c", pool="default", nodes=nodes))
    first, second, third = (leased(state, 10 * i, f"r{i}") for i in (1, 2, 3))
    assert state.leased_runs == 3
    state.apply(40, ev.JobPending(**first, cluster_id="c", created=START))
    state.apply(41, ev.JobRunning(**first, cluster_id="c", created=START))  # already counted out
    assert state.leased_runs == 2
    state.apply(42, ev.JobLeaseReturned(**second, cluster_id="c", created=START))
    assert state.leased_runs == 1
    state.apply(43, ev.JobSucceeded(**first, created=START))  # a started run ends: no change
    assert state.leased_runs == 1
    state.apply(44, ev.JobRunning(**third, cluster_id="c", created=START))
    assert state.leased_runs == 0
