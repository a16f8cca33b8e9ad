"""Pools in the scheduler's state: a node report's pool, and short-job penalties charged from
run events (a run that ended on its own before its pool's cutoff; never a preempted one)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from armada.model import events as ev
from armada.scheduler.cluster_state import ClusterState, node_key
from armada.scheduling import SchedulingConfig
from tests.factories import make_job, submission

START = datetime(2026, 1, 1, tzinfo=UTC)


def state_with_pools() -> ClusterState:
    config = msgspec.convert({"pools": [{"name": "gpu", "shortJobPenaltyCutoff": "10m"}]}, SchedulingConfig)
    state = ClusterState(config)
    nodes = [
        ev.ExecutorNode(name="g1", allocatable={"cpu": 8000}, pool="gpu"),
        ev.ExecutorNode(name="c1", allocatable={"cpu": 8000}),
    ]
    state.apply(1, ev.ExecutorReported(executor_id="c", pool="cpu", nodes=nodes))
    return state


def test_a_node_is_in_the_pool_its_report_names_else_in_its_executors() -> None:
    state = state_with_pools()
    rows = state.nodes.pool_rows()
    assert {pool: [state.nodes.ids[r] for r in rows[pool].tolist()] for pool in rows} == {
        "cpu": [node_key("c", "c1")],
        "gpu": [node_key("c", "g1")],
    }


@pytest.mark.parametrize(
    ("end", "minutes", "charged"),
    [(ev.JobSucceeded, 3, 4000), (ev.JobFailed, 3, 4000), (ev.JobSucceeded, 11, 0), (ev.JobPreempted, 3, 0)],
)
def test_a_short_run_is_charged_to_its_queue_in_its_pool(
    end: type[ev.Event], minutes: int, charged: int
) -> None:
    state = state_with_pools()
    job = make_job(queue="q", cpu="4")
    for seq, event in enumerate(submission(job, START), start=2):
        state.apply(seq, event)
    ids = {"queue": "q", "job_set_id": job.job_set_id, "job_id": job.id, "run_id": "r1"}
    state.apply(4, ev.JobLeased(**ids, cluster_id="c", node_id="g1", pool="gpu", created=START))
    state.apply(5, ev.JobRunning(**ids, cluster_id="c", created=START + timedelta(minutes=1)))
    state.apply(6, end(**ids, created=START + timedelta(minutes=1 + minutes)))
    db = state.jobs
    now = (START + timedelta(minutes=5)).timestamp()
    held = db.penalties.allocation(db.queue_index("q"), "gpu", now, len(db.resources))
    assert int(held[db.resources.column("cpu")]) == charged
