"""Reading the recorded window: what the replay takes from the log, by hand."""

from __future__ import annotations

from armada.model import events as ev
from armada.model.queues import Queue
from armada.scheduling import QueueSpec, SchedulingConfig
from armada.scheduling.replay import QueueChange
from armada.services.simulation.cycles import ROUNDING
from armada.services.simulation.recorded import _Reader
from armada.services.simulation.whatif import Candidate, CandidateQueue, candidate_settings
from tests.factories import make_job


def test_the_reader_takes_a_node_as_ready_when_it_was_reported() -> None:
    reader = _Reader(since=0.0, until=100.0)
    job = make_job(job_id="j1", queue="q")
    envelope = {"queue": "q", "job_set_id": job.job_set_id, "job_id": job.id}
    node = ev.ExecutorNode(name="n1", allocatable={"cpu": 4000, "memory": 2**34})
    reader.apply(1.0, ev.JobSubmitted(job=job, **envelope))
    reader.apply(10.0, ev.ExecutorReported(executor_id="c0", nodes=[node]))
    reader.apply(11.0, ev.ExecutorReported(executor_id="c0", nodes=[node]))  # unchanged: still 10
    reader.apply(10.3, ev.JobLeased(cluster_id="c0", node_id="n1", run_id="r1", **envelope))
    recorded = reader.finish()
    assert recorded.cycles.decided == (10.0 + ROUNDING,)
    assert recorded.cycles.instants == (10.3,)


def test_queues_are_as_at_the_window_start_and_change_in_it() -> None:
    reader = _Reader(since=10.0, until=100.0)
    reader.apply(1.0, ev.QueueCreated(queue="q", spec=Queue(name="q", priority_factor=1)))
    reader.apply(5.0, ev.QueueUpdated(queue="q", spec=Queue(name="q", priority_factor=2)))
    reader.apply(20.0, ev.QueueUpdated(queue="q", spec=Queue(name="q", priority_factor=4)))
    reader.apply(30.0, ev.QueueCreated(queue="r", spec=Queue(name="r", priority_factor=0.5)))
    recorded = reader.finish()
    assert {name: q.priority_factor for name, q in recorded.queues.items()} == {"q": 2, "r": 0.5}
    changes = [(t, i.queue.priority_factor) for t, i in recorded.timeline if isinstance(i, QueueChange)]
    assert changes == [(20.0, 4), (30.0, 0.5)]


def test_a_candidate_queue_setting_holds_whatever_the_log_set_later() -> None:
    candidate = Candidate(queues=[CandidateQueue(name="q", priority_factor=3)])
    _, settings = candidate_settings(candidate, SchedulingConfig(), [QueueSpec("q", 2), QueueSpec("r", 1)])
    assert settings(QueueSpec("q", 4, cordoned=True)) == QueueSpec("q", 3, cordoned=True)
    assert settings(QueueSpec("r", 4)) == QueueSpec("r", 4)


def test_a_failed_run_that_was_retried_is_replayed_as_a_failure() -> None:
    reader = _Reader(since=0.0, until=100.0)
    for job_id in ("retried", "failed"):
        job = make_job(job_id=job_id, queue="q")
        envelope = {"queue": "q", "job_set_id": job.job_set_id, "job_id": job_id}
        reader.apply(0.0, ev.JobSubmitted(job=job, **envelope))
        reader.apply(1.0, ev.JobLeased(cluster_id="c0", node_id="n1", run_id="r1", **envelope))
        reader.apply(4.0, ev.JobFailed(run_id="r1", **envelope))
    envelope = {"queue": "q", "job_set_id": "set-1", "job_id": "retried"}
    reader.apply(5.0, ev.JobLeased(cluster_id="c0", node_id="n1", run_id="r2", **envelope))
    reader.apply(15.0, ev.JobSucceeded(run_id="r2", **envelope))
    recorded = reader.finish()
    assert recorded.failures == {"retried": [3.0]}
    assert recorded.runtimes == {"retried": 10.0, "failed": 3.0}
