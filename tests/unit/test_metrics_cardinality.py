"""Series count of the server's state metrics at 1,000 queues x 100 nodes: bounded by queues,
pools, nodes and resources, never by jobs, and no job or run id in any label."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest

from armada.metrics.cluster import ClusterCollector
from armada.metrics.jobs import JobTimings
from armada.metrics.nodes import NodeCollector
from armada.metrics.states import JobStateMetrics
from armada.model import events as ev
from armada.model.queues import Queue
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling import SchedulingConfig
from tests.factories import make_job, submission
from tests.metrics import parse_samples

QUEUES, NODES, CLUSTERS = 1000, 100, 4
JOBS_PER_QUEUE = 3


def _workload() -> tuple[ClusterState, CollectorRegistry, set[str]]:
    state = ClusterState(SchedulingConfig())
    registry = CollectorRegistry()
    listeners = [JobTimings(registry), JobStateMetrics(registry)]
    registry.register(ClusterCollector(lambda: state))
    registry.register(NodeCollector(lambda: state))
    seq = 0

    def apply(event: ev.Event) -> None:
        nonlocal seq
        seq += 1
        state.apply(seq, event)
        for listener in listeners:
            if type(event) in listener.events:
                listener(state, event)

    start = datetime(2026, 1, 1, tzinfo=UTC)
    for c in range(CLUSTERS):
        nodes = [
            ev.ExecutorNode(name=f"node-{n}", allocatable={"cpu": 64_000, "memory": 256 << 30})
            for n in range(NODES // CLUSTERS)
        ]
        apply(ev.ExecutorReported(executor_id=f"c{c}", pool=f"pool-{c % 2}", nodes=nodes, created=start))
    ids: set[str] = set()
    for q in range(QUEUES):
        apply(ev.QueueCreated(queue=f"q{q}", spec=Queue(name=f"q{q}"), created=start))
        for j in range(JOBS_PER_QUEUE):
            job = make_job(queue=f"q{q}", cpu="1", memory="1Gi")
            ids.add(job.id)
            for event in submission(job, start):
                apply(event)
            if j == 0:  # one job per queue runs its whole life: leased, running, succeeded
                envelope = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}
                run = f"run-{q}"
                ids.add(run)
                cluster, node = f"c{q % CLUSTERS}", f"node-{q % (NODES // CLUSTERS)}"
                moment = start + timedelta(seconds=q)
                pool = f"pool-{q % CLUSTERS % 2}"
                apply(ev.JobLeased(**envelope, run_id=run, cluster_id=cluster, node_id=node, pool=pool))
                running = ev.JobRunning(**envelope, run_id=run, cluster_id=cluster, node_name=node)
                running.created = moment
                apply(running)
                if q % 2:
                    apply(ev.JobSucceeded(**envelope, run_id=run, cluster_id=cluster, node_name=node))
    return state, registry, ids


def test_series_are_bounded_by_queues_pools_and_nodes_never_by_jobs() -> None:
    state, registry, ids = _workload()
    resources = len(state.jobs.resources.names)  # cpu, memory, and pods (no node limit: no node series)
    samples = parse_samples(generate_latest(registry).decode())
    per_family = Counter(name for name, _ in samples)
    # Queues x pools x (priority classes + resources x 2 gauges) for the queue gauges, queues
    # x 2 states for upstream's queue size; nodes x resources x 2 for the node gauges.
    pools, classes = 2, len(SchedulingConfig().priority_classes)
    assert per_family["armada_queue_queued_jobs"] == QUEUES * pools * classes
    assert per_family["armada_queue_size"] == QUEUES * 2
    # Every queued job may run in both pools: primary in one, secondary in the other.
    assert per_family["armada_queue_resource_queued"] == QUEUES * pools * resources
    # Half the queues hold one running job: one series per resource it requests.
    assert per_family["armada_queue_resource_allocated"] == QUEUES // 2 * resources
    # Per cluster: its resources but pods (no node limit), and its node count.
    for family in ("armada_cluster_capacity", "armada_cluster_farm_capacity"):
        assert per_family[family] == CLUSTERS * resources - (family.endswith("farm_capacity") * CLUSTERS)
    assert per_family["armada_scheduler_node_allocatable_resource"] == NODES * (resources - 1)
    assert per_family["armada_scheduler_node_allocated_resource"] == NODES * (resources - 1)
    # Transitions: per queue at most (leased, running, succeeded); per node likewise.
    assert per_family["armada_scheduler_job_state_counter_by_queue_total"] <= QUEUES * 3
    assert per_family["armada_scheduler_job_state_counter_by_node_total"] <= NODES * 3
    # No ``_created`` series: Prometheus would store one more series per counter.
    assert not [name for name in per_family if name.endswith("_created")]
    # About 59 series per queue (40% are the job-time histograms' buckets) and a few per
    # node: ~59,000 at this size, whatever the number of jobs.
    total = len(samples)
    assert total < 60 * QUEUES + 20 * NODES, per_family.most_common(10)
    labels = {value for _, pairs in samples for _, value in pairs}
    assert not labels & ids, "a job or run id became a label value"
