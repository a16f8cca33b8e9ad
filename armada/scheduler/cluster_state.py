"""The scheduler's in-memory picture of the system, kept current by applying events.

Every replica follows the log into a :class:`ClusterState`: the scheduling core's job and
node databases, the queues, the executors and the active runs. The leader schedules from
it; any replica answers executors' lease calls from it. Applying an event is pure
bookkeeping: decisions (expiry, requeues, leases) are made elsewhere and come back here as
events, so every replica that applies the same log holds the same state. The one exception
is the leader's own leases while they are being appended: they are held in the job db ahead
of their events (:mod:`.pending_leases`), so the next cycle does not reuse their capacity.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from armada.model import events as ev
from armada.model.jobs import RETRY_ON_PREEMPTION_ANNOTATION, Job
from armada.model.lifecycle import RUN_STATE_AFTER, RunState, run_moves
from armada.model.resources import ResourceIndex
from armada.model.retry_mutation import NODE_NAME_LABEL
from armada.scheduler.pending_leases import PendingLeases
from armada.scheduling import JobDb, NodeDb, NodeSpec, QueueSpec, SchedulingConfig
from armada.scheduling.requirements import JobRequirements, RequirementsError, job_requirements

log = structlog.get_logger(__name__)


def node_key(executor: str, node: str) -> str:
    """Node ids are unique per executor only; the scheduler keys nodes by both."""
    return f"{executor}/{node}"


def split_node_key(key: str) -> tuple[str, str]:
    """The executor and node id of a :func:`node_key` (executor ``""`` for a bare node id)."""
    executor, slash, node = key.partition("/")
    return (executor, node) if slash else ("", key)


@dataclass(slots=True)
class RunInfo:
    """A run that holds (or is about to hold) resources on a node."""

    run_id: str
    job_id: str
    executor: str
    node: str
    state: RunState = RunState.LEASED


@dataclass
class ExecutorInfo:
    executor_id: str
    pool: str
    nodes: dict[str, ev.ExecutorNode] = field(default_factory=dict)
    last_seen: float = 0.0
    #: Runs leased to this executor, by run id.
    runs: dict[str, RunInfo] = field(default_factory=dict)
    #: Runs not yet reported back by the executor (so their absence is no news), in lease
    #: order. Keys views let a lease call settle tens of thousands of held runs with set
    #: operations instead of a loop.
    unacknowledged: dict[str, None] = field(default_factory=dict)
    #: Bumped when it is leased a run or its nodes change: a long-polling lease call has news
    #: to look for only then (or when ``ClusterState.orders_changed`` moves). Runs that start
    #: or end are not news to the executor that reported them; a run the server dropped while
    #: the executor still holds it is told as stale by its next call.
    changes: int = 0

    def acknowledge(self, run_ids: Iterable[str]) -> None:
        """The executor has reported holding these runs: their absence later means gone."""
        for run_id in run_ids:
            del self.unacknowledged[run_id]


@dataclass(slots=True)
class JobExtras:
    """What the scheduler must remember of a non-terminal job beyond its requirements.

    One per queued or running job (a million in a big backlog): slotted, and its queue and
    job set names interned, so that a job costs one small object here (~200 bytes less).
    """

    queue: str = ""
    job_set_id: str = ""
    attempts: int = 0
    cancel_requested: bool = False
    preempt_requested: bool = False
    retry_on_preemption: bool = False
    run_id: str = ""


class ClusterState:
    """Queues, executors, nodes, active runs and schedulable jobs, as of log position ``seq``."""

    def __init__(self, config: SchedulingConfig) -> None:
        self.config = config
        self.nodes = NodeDb(ResourceIndex())
        self.jobs = JobDb(config, self.nodes)
        self.queues: dict[str, QueueSpec] = {}
        self.executors: dict[str, ExecutorInfo] = {}
        self.runs: dict[str, RunInfo] = {}
        #: Runs leased and not yet reported pending or running, over all executors.
        self.leased_runs = 0
        self.extras: dict[str, JobExtras] = {}
        #: The leader's leases held in ``jobs`` while their append is in flight (overlapped cycles).
        self.pending = PendingLeases()
        #: Active jobs with a cancel or preemption requested (few): the lease service tells
        #: their executors without scanning every run.
        self.kill_requested: set[str] = set()
        #: Operators' cordons: executor → reason (no new leases) and executor → node → reason
        #: (the node is unschedulable here at once, and its executor cordons it in the cluster).
        self.cordoned_executors: dict[str, str] = {}
        self.cordoned_nodes: dict[str, dict[str, str]] = {}
        #: Bumped whenever a run may have lost its node (a node report, a lease onto a node
        #: not known to be ready), so the scheduler scans runs for lost nodes only then.
        self.node_generation = 0
        #: Bumped when a kill is requested or a node cordon changes (see ``ExecutorInfo.changes``).
        self.orders_changed = 0
        self.seq = 0

    # --- reading ----------------------------------------------------------------------

    def queue_specs(self) -> list[QueueSpec]:
        return list(self.queues.values())

    def active_run(self, job_id: str) -> RunInfo | None:
        extras = self.extras.get(job_id)
        return self.runs.get(extras.run_id) if extras and extras.run_id else None

    # --- applying events ----------------------------------------------------------------

    def apply(self, seq: int, event: ev.Event) -> None:
        self.apply_all([(seq, event)])

    def apply_all(
        self,
        events: Iterable[tuple[int, ev.Event]],
        observe: Mapping[type[ev.Event], Callable[[ev.Event], None]] | None = None,
    ) -> None:
        """Apply events in order; submissions are added to the job db in bulk.

        New jobs are buffered and added together before any event that could concern them
        (anything but their own ``queued``), which keeps order and is much cheaper per job.
        ``observe`` holds a callback per event type, called after an event of that type takes
        effect (a submission: once buffered).
        """
        submitted: list[JobRequirements] = []
        for seq, event in events:
            kind = type(event)
            if kind is ev.JobSubmitted:
                self._submitted(event, submitted)  # type: ignore[arg-type]
            else:
                if submitted and kind is not ev.JobQueued:
                    self._add_jobs(submitted)
                    submitted = []
                handler = _HANDLERS.get(kind)
                if handler is not None:
                    handler(self, event)
            self.seq = seq
            if observe and (observer := observe.get(kind)) is not None:
                observer(event)
        if submitted:
            self._add_jobs(submitted)

    def _add_jobs(self, jobs: list[JobRequirements]) -> None:
        try:
            self.jobs.add_many(jobs)
        except ValueError as exc:  # one bad job must not lose the others: add them one by one
            log.error("bulk add failed, adding one by one", error=str(exc))
            for job in jobs:
                try:
                    self.jobs.add(job)
                except ValueError as one:
                    log.error("job cannot be scheduled", job_id=job.id, error=str(one))
                    self.extras.pop(job.id, None)

    def _queue(self, event: ev.QueueCreated | ev.QueueUpdated) -> None:
        spec = event.spec
        limits = {
            name: dict(pc.maximum_resource_fraction)
            for name, pc in spec.resource_limits_by_priority_class_name.items()
        }
        self.queues[spec.name] = QueueSpec(
            name=spec.name,
            priority_factor=spec.priority_factor,
            resource_limits_by_priority_class_name=limits,
            cordoned=spec.cordoned,
        )

    def _queue_deleted(self, event: ev.QueueDeleted) -> None:
        self.queues.pop(event.queue, None)

    def _executor_reported(self, event: ev.ExecutorReported) -> None:
        info = self.executors.get(event.executor_id)
        if info is None:
            info = self.executors[event.executor_id] = ExecutorInfo(event.executor_id, event.pool)
        info.pool = event.pool
        info.last_seen = max(info.last_seen, event.created.timestamp())
        reported = {node.name: node for node in event.nodes}
        for name in set(info.nodes) - set(reported):
            self.nodes.remove(node_key(event.executor_id, name))
        cordoned = self.cordoned_nodes.get(event.executor_id, {})
        for node in event.nodes:
            self.nodes.upsert(_node_spec(event.executor_id, event.pool, node, node.name in cordoned))
        info.nodes = reported
        info.changes += 1
        self.node_generation += 1

    def _executor_settings(self, event: ev.ExecutorSettingsUpserted | ev.ExecutorSettingsDeleted) -> None:
        if isinstance(event, ev.ExecutorSettingsUpserted) and event.cordoned:
            self.cordoned_executors[event.executor_id] = event.cordon_reason
        else:
            self.cordoned_executors.pop(event.executor_id, None)

    def _node_cordon(self, event: ev.NodeCordonChanged) -> None:
        cordoned = self.cordoned_nodes.setdefault(event.executor_id, {})
        if event.cordoned:
            cordoned[event.node] = event.reason
        else:
            cordoned.pop(event.node, None)
        self.orders_changed += 1
        info = self.executors.get(event.executor_id)
        node = info.nodes.get(event.node) if info else None
        if info is not None and node is not None:
            self.nodes.upsert(_node_spec(info.executor_id, info.pool, node, event.cordoned))

    def _executor_deleted(self, event: ev.ExecutorDeleted) -> None:
        """Forget the executor and its nodes (its runs ended, as lost, before this event)."""
        info = self.executors.pop(event.executor_id, None)
        self.cordoned_nodes.pop(event.executor_id, None)
        if info is None:
            return
        for name in info.nodes:
            self.nodes.remove(node_key(event.executor_id, name))
        for run_id in list(info.runs):
            self._drop_run(run_id)
        self.node_generation += 1

    def _heartbeat(self, event: ev.ExecutorHeartbeat) -> None:
        info = self.executors.get(event.executor_id)
        if info is not None:
            info.last_seen = max(info.last_seen, event.created.timestamp())

    def _submitted(self, event: ev.JobSubmitted, buffer: list[JobRequirements]) -> None:
        job = event.job
        try:
            buffer.append(job_requirements(job, submitted=event.created.timestamp()))
        except (RequirementsError, ValueError) as exc:
            # Submission validated the job; this only guards against a log older than the rules.
            log.error("job cannot be scheduled", job_id=job.id, error=str(exc))
            return
        self.extras[job.id] = JobExtras(
            queue=sys.intern(job.queue),
            job_set_id=sys.intern(job.job_set_id),
            retry_on_preemption=job.annotations.get(RETRY_ON_PREEMPTION_ANNOTATION, "").lower() == "true",
        )

    def _queued(self, event: ev.JobQueued) -> None:
        extras = self.extras.get(event.job_id)
        if extras is None:
            return
        extras.attempts = event.attempts
        if event.job_id in self.pending and event.job is None:
            return  # queued in the log as in the job db's eyes: the held lease stays until its append ends
        if event.job is not None and event.job_id in self.jobs:
            self.pending.forget(event.job_id)
            self._replace_job(event.job)
            return
        if event.job_id in self.jobs and self.jobs.node_of(event.job_id) is not None:
            self.jobs.requeue(event.job_id)

    def _replace_job(self, job: Job) -> None:
        """Requeue a job with a changed spec (a retry policy's mutate): new requirements."""
        submitted = float(self.jobs.cols["submitted"][self.jobs.row(job.id)])
        self.jobs.remove(job.id)
        try:
            self.jobs.add(job_requirements(job, submitted=submitted))
        except (RequirementsError, ValueError) as exc:
            log.error("mutated job cannot be scheduled", job_id=job.id, error=str(exc))
            self.extras.pop(job.id, None)

    def _leased(self, event: ev.JobLeased) -> None:
        extras = self.extras.get(event.job_id)
        if extras is None:
            return
        key = node_key(event.cluster_id, event.node_id)
        if not self.pending.confirm(self.jobs, event.job_id, key, event.pool):
            self.jobs.lease(event.job_id, key, event.pool)
        run = RunInfo(event.run_id, event.job_id, event.cluster_id, event.node_id)
        replaced = self.runs.get(event.run_id)
        if replaced is None or replaced.state is not RunState.LEASED:
            self.leased_runs += 1
        self.runs[event.run_id] = run
        extras.run_id = event.run_id
        executor = self.executors.get(event.cluster_id)
        if executor is None:
            executor = self.executors[event.cluster_id] = ExecutorInfo(event.cluster_id, event.pool)
        executor.runs[event.run_id] = run
        executor.unacknowledged[event.run_id] = None
        executor.changes += 1
        node = executor.nodes.get(event.node_id)
        if node is None or not node.ready:
            self.node_generation += 1

    def _progress(self, event: ev.JobPending | ev.JobRunning) -> None:
        run = self.runs.get(event.run_id)
        if run is not None:
            to = RUN_STATE_AFTER[event.type]
            if run_moves(run.state, to):
                self.leased_runs -= run.state is RunState.LEASED
                run.state = to
                if isinstance(event, ev.JobRunning) and event.job_id in self.jobs:
                    self.jobs.started(event.job_id, event.created.timestamp())
            executor = self.executors.get(run.executor)
            if executor is not None:
                executor.unacknowledged.pop(run.run_id, None)

    def _run_ended(self, event: ev.JobLeaseReturned | ev.JobLeaseExpired) -> None:
        self._drop_run(event.run_id)

    def _finished(self, event: ev.Event) -> None:
        extras = self.extras.pop(event.job_id, None)
        self.kill_requested.discard(event.job_id)
        self.pending.forget(event.job_id)
        if extras is not None and extras.run_id:
            self._drop_run(extras.run_id)
        if event.job_id in self.jobs:
            # A run that ended on its own (not preempted) may be charged as a short job.
            ended = None if isinstance(event, ev.JobPreempted) else event.created.timestamp()
            self.jobs.remove(event.job_id, finished=ended)

    def _cancelling(self, event: ev.JobCancelling) -> None:
        extras = self.extras.get(event.job_id)
        if extras is not None:
            extras.cancel_requested = True
            self.kill_requested.add(event.job_id)
            self.orders_changed += 1

    def _preempting(self, event: ev.JobPreempting) -> None:
        extras = self.extras.get(event.job_id)
        if extras is not None:
            extras.preempt_requested = True
            self.kill_requested.add(event.job_id)
            self.orders_changed += 1

    def _reprioritized(self, event: ev.JobReprioritized) -> None:
        if event.job_id in self.jobs:
            self.jobs.reprioritize(event.job_id, event.new_priority)

    def _drop_run(self, run_id: str) -> None:
        run = self.runs.pop(run_id, None)
        if run is None:
            return
        self.leased_runs -= run.state is RunState.LEASED
        executor = self.executors.get(run.executor)
        if executor is not None:
            executor.runs.pop(run_id, None)
            executor.unacknowledged.pop(run_id, None)
        extras = self.extras.get(run.job_id)
        if extras is not None and extras.run_id == run_id:
            extras.run_id = ""


def _node_spec(executor: str, pool: str, node: ev.ExecutorNode, cordoned: bool) -> NodeSpec:
    return NodeSpec(
        id=node_key(executor, node.name),
        pool=node.pool or pool,
        executor=executor,
        # Every node carries its name label, as Kubernetes nodes do (retries avoid nodes by it).
        labels={NODE_NAME_LABEL: node.name, **node.labels},
        taints=tuple(node.taints),
        allocatable=dict(node.allocatable),
        non_armada_allocated=dict(node.allocated_non_armada),
        unschedulable=node.unschedulable or cordoned,
        ready=node.ready,
    )


_HANDLERS: dict[type[ev.Event], Any] = {
    ev.QueueCreated: ClusterState._queue,
    ev.QueueUpdated: ClusterState._queue,
    ev.QueueDeleted: ClusterState._queue_deleted,
    ev.ExecutorReported: ClusterState._executor_reported,
    ev.ExecutorHeartbeat: ClusterState._heartbeat,
    ev.ExecutorSettingsUpserted: ClusterState._executor_settings,
    ev.ExecutorSettingsDeleted: ClusterState._executor_settings,
    ev.NodeCordonChanged: ClusterState._node_cordon,
    ev.ExecutorDeleted: ClusterState._executor_deleted,
    ev.JobQueued: ClusterState._queued,
    ev.JobLeased: ClusterState._leased,
    ev.JobPending: ClusterState._progress,
    ev.JobRunning: ClusterState._progress,
    ev.JobLeaseReturned: ClusterState._run_ended,
    ev.JobLeaseExpired: ClusterState._run_ended,
    ev.JobSucceeded: ClusterState._finished,
    ev.JobFailed: ClusterState._finished,
    ev.JobCancelled: ClusterState._finished,
    ev.JobPreempted: ClusterState._finished,
    ev.JobCancelling: ClusterState._cancelling,
    ev.JobPreempting: ClusterState._preempting,
    ev.JobReprioritized: ClusterState._reprioritized,
}
