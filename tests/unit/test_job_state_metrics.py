"""Upstream's job state transition counters, fed the events a job's life appends: prior states
and the seconds spent in them, per queue and per node, preemption's lost resource-seconds, and
the age of the oldest lease that has not started."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest

from armada.metrics.states import JobStateMetrics
from armada.model import events as ev
from armada.model.queues import Queue
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling import SchedulingConfig
from tests.factories import make_job, submission
from tests.metrics import Samples, parse_samples, value

START = datetime(2026, 1, 1, tzinfo=UTC)


class Life:
    """One cluster with one node; events applied to the state, then told to the metrics."""

    def __init__(self, now: float) -> None:
        """``now``: the clock, in seconds after ``START``."""
        self.state = ClusterState(SchedulingConfig())
        self.registry = CollectorRegistry()
        self.metrics = JobStateMetrics(self.registry, clock=lambda: START.timestamp() + now)
        self.seq = 0
        self.apply(
            ev.ExecutorReported(
                executor_id="c1", nodes=[ev.ExecutorNode(name="n1", allocatable={"cpu": 8000})]
            )
        )
        self.apply(ev.QueueCreated(queue="q", spec=Queue(name="q")))

    def apply(self, event: ev.Event, at: float | None = None) -> None:
        if at is not None:
            event.created = START + timedelta(seconds=at)
        self.seq += 1
        self.state.apply(self.seq, event)
        if type(event) in JobStateMetrics.events:
            self.metrics(self.state, event)

    def job(self, cpu: str = "2") -> dict[str, str]:
        job = make_job(queue="q", cpu=cpu, memory="1Gi")
        for event in submission(job, START):
            self.apply(event)
        return {"queue": "q", "job_set_id": job.job_set_id, "job_id": job.id, "run_id": f"run-{job.id}"}

    def samples(self) -> Samples:
        return parse_samples(generate_latest(self.registry).decode())


def test_a_run_counts_each_transition_with_its_prior_state_and_seconds() -> None:
    life = Life(now=0)
    job = life.job()
    life.apply(ev.JobLeased(**job, cluster_id="c1", node_id="n1", pool="default"), at=10)
    life.apply(ev.JobPending(**job, cluster_id="c1", node_name="n1"), at=12)
    life.apply(ev.JobRunning(**job, cluster_id="c1", node_name="n1"), at=15)
    life.apply(ev.JobSucceeded(**job, cluster_id="c1", node_name="n1"), at=115)
    samples = life.samples()
    queue = {"queue": "q", "pool": "default"}
    node = {"node": "n1", "pool": "default", "cluster": "c1"}
    steps = [
        ("leased", "queued", 10),
        ("pending", "leased", 2),
        ("running", "pending", 3),
        ("succeeded", "running", 100),
    ]
    for state, prior, seconds in steps:
        for labels, by in ((queue, "queue"), (node, "node")):
            count = f"armada_scheduler_job_state_counter_by_{by}_total"
            spent = f"armada_scheduler_job_state_seconds_by_{by}_total"
            assert value(samples, count, **labels, state=state, priorState=prior) == 1
            assert value(samples, spent, **labels, state=state, priorState=prior) == seconds
            cpu = f"armada_scheduler_job_state_resource_seconds_by_{by}_total"
            assert value(samples, cpu, **labels, state=state, priorState=prior, resource="cpu") == 2 * seconds


def test_a_failed_job_counts_under_its_failure_category_by_queue_and_node() -> None:
    life = Life(now=0)
    job = life.job()
    life.apply(ev.JobLeased(**job, cluster_id="c1", node_id="n1", pool="default"), at=0)
    life.apply(ev.JobRunning(**job, cluster_id="c1", node_name="n1"), at=1)
    failed = ev.JobFailed(
        **job, cluster_id="c1", node_name="n1", failure_category="oom", failure_subcategory=""
    )
    life.apply(failed, at=2)
    samples = life.samples()
    error = {"pool": "default", "category": "oom", "subcategory": ""}
    assert value(samples, "armada_scheduler_job_error_classification_by_queue_total", queue="q", **error) == 1
    node = {"node": "n1", "cluster": "c1", **error}
    assert value(samples, "armada_scheduler_job_error_classification_by_node_total", **node) == 1


def test_a_preempted_run_loses_its_requests_times_the_seconds_it_ran() -> None:
    life = Life(now=0)
    job = life.job(cpu="2")
    life.apply(ev.JobLeased(**job, cluster_id="c1", node_id="n1", pool="default"), at=0)
    life.apply(ev.JobRunning(**job, cluster_id="c1", node_name="n1"), at=10)
    life.apply(ev.JobPreempted(**job), at=70)
    samples = life.samples()
    lost = "armada_scheduler_job_resource_seconds_lost_to_preemption_total"
    labels = {"queue": "q", "pool": "default", "checkpoint_interval": "none"}
    assert value(samples, lost, **labels, resource="cpu") == 2 * 60
    assert value(samples, lost, **labels, resource="memory") == 2**30 * 60
    counter = "armada_scheduler_job_state_counter_by_queue_total"
    assert value(samples, counter, queue="q", pool="default", state="preempted", priorState="running") == 1


def test_a_job_cancelled_while_queued_ends_from_queued() -> None:
    life = Life(now=0)
    job = life.job()
    life.apply(ev.JobCancelled(**job), at=5)
    samples = life.samples()
    labels = {"queue": "q", "pool": "", "state": "cancelled", "priorState": "queued"}
    assert value(samples, "armada_scheduler_job_state_counter_by_queue_total", **labels) == 1


def test_the_oldest_lease_not_started_ages_until_its_run_starts_or_ends() -> None:
    life = Life(now=100)
    first, second = life.job(), life.job()
    oldest = "armada_scheduler_oldest_unstarted_lease_seconds"
    assert value(life.samples(), oldest) == 0
    life.apply(ev.JobLeased(**first, cluster_id="c1", node_id="n1", pool="default"), at=10)
    life.apply(ev.JobLeased(**second, cluster_id="c1", node_id="n1", pool="default"), at=40)
    assert value(life.samples(), oldest) == 90
    life.apply(ev.JobPending(**first, cluster_id="c1", node_name="n1"), at=50)
    assert value(life.samples(), oldest) == 60
    life.apply(ev.JobLeaseReturned(**second, cluster_id="c1"), at=60)
    assert value(life.samples(), oldest) == 0
