"""Builders of jobs and event streams for tests and benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from armada.eventstore.store import EventStore
from armada.model import events as ev
from armada.model.ids import new_job_id, new_run_id
from armada.model.jobs import Job, ResourceRequirements
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy, RetryRule


def pod_spec(cpu: str = "1", memory: str = "64Mi", **extra: Any) -> dict[str, Any]:
    """What the examples and tests submit: one container, its resources, and ``extra`` fields."""
    resources = {"cpu": cpu, "memory": memory}
    return {
        "containers": [
            {
                "name": "main",
                "image": "alpine",
                "args": ["sleep", "1"],
                "resources": {"requests": dict(resources), "limits": dict(resources)},
            }
        ],
        **extra,
    }


def make_job(
    *,
    job_id: str | None = None,
    queue: str = "queue-a",
    job_set_id: str = "set-1",
    cpu: str = "1",
    memory: str = "1Gi",
    priority: float = 0.0,
    annotations: dict[str, str] | None = None,
    client_id: str = "",
) -> Job:
    resources = {"cpu": cpu, "memory": memory}
    return Job(
        id=job_id or new_job_id(),
        queue=queue,
        job_set_id=job_set_id,
        namespace="default",
        owner="alice",
        client_id=client_id,
        priority=priority,
        annotations=annotations or {},
        pod_spec=pod_spec(cpu, memory),
        scheduling_resource_requirements=ResourceRequirements(requests=resources, limits=resources),
    )


def submission(job: Job, when: datetime | None = None) -> list[ev.Event]:
    """The events a successful submission appends: ``submitted`` then ``queued``."""
    created = when or datetime.now(UTC)
    envelope = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id, "created": created}
    return [ev.JobSubmitted(job=job, **envelope), ev.JobQueued(**envelope)]


async def append_in_batches(
    store: EventStore, stream: list[ev.Event], rng: random.Random, largest: int = 40
) -> None:
    """``stream`` appended in transactions of random sizes up to ``largest``, as writers do."""
    position = 0
    while position < len(stream):
        size = rng.randint(1, largest)
        await store.append(stream[position : position + size])
        position += size


class RandomHistory:
    """A random but plausible event history exercising every event type.

    Jobs move through valid lifecycles (queued → leased → pending → running → terminal, with
    requeues, cancellations, preemptions and reprioritizations); queues are created,
    updated and deleted; executors report nodes and heartbeat.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = datetime(2026, 1, 1, tzinfo=UTC)
        self.queues: set[str] = set()
        self.policies: set[str] = set()
        self.saved_views: set[tuple[str, str]] = set()
        self.queued: list[Job] = []
        self.active: dict[str, tuple[Job, str, str]] = {}  # job id -> (job, run id, phase)

    def _tick(self) -> datetime:
        self.clock += timedelta(milliseconds=self.rng.randint(1, 500))
        return self.clock

    def _env(self, job: Job, run_id: str = "") -> dict[str, object]:
        return {
            "queue": job.queue,
            "job_set_id": job.job_set_id,
            "job_id": job.id,
            "run_id": run_id,
            "created": self._tick(),
        }

    def events(self, count: int) -> Iterator[ev.Event]:
        produced = 0
        while produced < count:
            for event in self._step():
                produced += 1
                yield event

    def _step(self) -> list[ev.Event]:
        rng = self.rng
        roll = rng.random()
        if not self.queues or roll < 0.03:
            return self._queue_change()
        if roll < 0.06:
            return self._executor_change()
        if roll < 0.07:
            return self._policy_change()
        if roll < 0.08:
            return self._saved_view_change()
        if roll < 0.35 or not (self.queued or self.active):
            job = make_job(
                queue=rng.choice(sorted(self.queues)),
                job_set_id=f"set-{rng.randint(1, 5)}",
                cpu=rng.choice(["100m", "1", "2"]),
                priority=float(rng.randint(0, 3)),
            )
            self.queued.append(job)
            return submission(job, self._tick())
        if self.queued and (roll < 0.6 or not self.active):
            return self._from_queued(self.queued.pop(rng.randrange(len(self.queued))))
        job_id = rng.choice(sorted(self.active))
        return self._from_active(*self.active.pop(job_id))

    def _queue_change(self) -> list[ev.Event]:
        busy = {j.queue for j in self.queued} | {j.queue for j, _, _ in self.active.values()}
        idle = sorted(self.queues - busy)
        if idle and self.rng.random() < 0.3:
            name = self.rng.choice(idle)
            self.queues.discard(name)
            return [ev.QueueDeleted(queue=name, created=self._tick())]
        name = f"queue-{self.rng.randint(1, 6)}"
        spec = Queue(
            name=name,
            priority_factor=self.rng.choice([0.5, 1.0, 2.0]),
            cordoned=self.rng.random() < 0.2,
            labels={"team": name},
        )
        if name not in self.queues:
            self.queues.add(name)
            return [ev.QueueCreated(queue=name, spec=spec, created=self._tick())]
        return [ev.QueueUpdated(queue=name, spec=spec, created=self._tick())]

    def _policy_change(self) -> list[ev.Event]:
        name = f"policy-{self.rng.randint(1, 3)}"
        if name in self.policies and self.rng.random() < 0.3:
            self.policies.discard(name)
            return [ev.RetryPolicyDeleted(name=name, created=self._tick())]
        rule = RetryRule(action="Retry", on_category="transient")
        spec = RetryPolicy(name=name, retry_limit=self.rng.randint(0, 5), rules=[rule])
        if name not in self.policies:
            self.policies.add(name)
            return [ev.RetryPolicyCreated(spec=spec, created=self._tick())]
        return [ev.RetryPolicyUpdated(spec=spec, created=self._tick())]

    def _saved_view_change(self) -> list[ev.Event]:
        key = (f"user-{self.rng.randint(1, 2)}", f"view {self.rng.randint(1, 2)}")
        if key in self.saved_views and self.rng.random() < 0.5:
            self.saved_views.discard(key)
            return [ev.LookoutViewDeleted(user=key[0], name=key[1], created=self._tick())]
        self.saved_views.add(key)
        state = {"query": f"queue=queue-{self.rng.randint(1, 6)}", "stored": {}}
        return [ev.LookoutViewSaved(user=key[0], name=key[1], state=state, created=self._tick())]

    def _executor_change(self) -> list[ev.Event]:
        executor = f"cluster-{self.rng.randint(1, 3)}"
        roll = self.rng.random()
        if roll < 0.4:
            return [ev.ExecutorHeartbeat(executor_id=executor, created=self._tick())]
        if roll < 0.6:
            return [self._cordon_change(executor)]
        if roll < 0.65 and executor != "cluster-1":  # runs are only ever leased to cluster-1
            return [ev.ExecutorDeleted(executor_id=executor, requestor="ops", created=self._tick())]
        nodes = [
            ev.ExecutorNode(
                name=f"{executor}-node-{i}",
                labels={"zone": str(i % 2)},
                allocatable={"cpu": 32000, "memory": 2**37},
                ready=self.rng.random() < 0.9,
            )
            for i in range(self.rng.randint(0, 4))
        ]
        return [ev.ExecutorReported(executor_id=executor, pool="default", nodes=nodes, created=self._tick())]

    def _cordon_change(self, executor: str) -> ev.Event:
        """An operator's executor settings or node cordon (fleet controls)."""
        roll, created = self.rng.random(), self._tick()
        if roll < 0.3:
            cordoned = self.rng.random() < 0.7
            reason = "upgrade" if cordoned else ""
            return ev.ExecutorSettingsUpserted(
                executor_id=executor,
                cordoned=cordoned,
                cordon_reason=reason,
                requestor="ops",
                created=created,
            )
        if roll < 0.6:
            return ev.ExecutorSettingsDeleted(executor_id=executor, requestor="ops", created=created)
        node, cordoned = f"{executor}-node-{self.rng.randint(0, 3)}", self.rng.random() < 0.6
        return ev.NodeCordonChanged(
            executor_id=executor,
            node=node,
            cordoned=cordoned,
            reason="bad disk" if cordoned else "",
            created=created,
        )

    def _from_queued(self, job: Job) -> list[ev.Event]:
        roll = self.rng.random()
        if roll < 0.15:
            return [
                ev.JobCancelling(**self._env(job), reason="stop"),
                ev.JobCancelled(**self._env(job), reason="stop", requestor="alice"),
            ]
        if roll < 0.25:
            self.queued.append(job)
            priority = float(self.rng.randint(0, 9))
            return [
                ev.JobReprioritizing(**self._env(job), new_priority=priority),
                ev.JobReprioritized(**self._env(job), new_priority=priority),
            ]
        if roll < 0.3:
            return [ev.JobFailed(**self._env(job), reason="fits no node", cause=ev.FailureCause.REJECTED)]
        run_id = new_run_id()
        self.active[job.id] = (job, run_id, "leased")
        return [ev.JobLeased(**self._env(job, run_id), cluster_id="cluster-1", node_id="node-1")]

    def _from_active(self, job: Job, run_id: str, phase: str) -> list[ev.Event]:
        env = self._env(job, run_id)
        roll = self.rng.random()
        if roll < 0.1:
            self.queued.append(job)
            return [
                ev.JobLeaseReturned(**env, reason="pod stuck", run_attempted=phase == "running"),
                ev.JobQueued(**self._env(job), attempts=1),
            ]
        if roll < 0.15:
            self.queued.append(job)
            return [
                ev.JobLeaseExpired(**env, cluster_id="cluster-1"),
                ev.JobQueued(**self._env(job), attempts=1),
            ]
        if roll < 0.22:
            return [
                ev.JobPreempting(**env, reason="fair share"),
                ev.JobPreempted(**self._env(job, run_id), reason="fair share", preempting_job_id="x"),
            ]
        if roll < 0.28:
            return [ev.JobCancelled(**env, reason="user", requestor="bob")]
        if phase == "leased":
            self.active[job.id] = (job, run_id, "pending")
            return [
                ev.JobPending(
                    **env, cluster_id="cluster-1", node_name="node-1", pod_name=f"armada-{job.id}-0"
                )
            ]
        if phase == "pending":
            self.active[job.id] = (job, run_id, "running")
            where = {"cluster_id": "cluster-1", "node_name": "node-1", "pod_name": f"armada-{job.id}-0"}
            running: list[ev.Event] = [ev.JobRunning(**env, **where)]
            if len(self.active) % 4 == 0:  # some jobs expose ports (no draw: same histories as before)
                running.append(ev.JobIngressInfo(**env, **where, ingress_addresses={8080: "10.0.0.1:30080"}))
            return running
        if roll < 0.7:
            return [ev.JobSucceeded(**env, cluster_id="cluster-1", node_name="node-1")]
        return [ev.JobFailed(**env, reason="exit 3", exit_code=3, log_tail="boom")]


def finished(job_id: str, when: datetime) -> list[ev.Event]:
    job = make_job(job_id=job_id)
    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id, "created": when}
    return [*submission(job, when), ev.JobCancelled(**env, reason="stop", requestor="alice")]
