"""What the forecasts know of runtimes, learned from the log as the follower applies it.

A follower listener: for each job submitted it remembers its hint and deadline (only if it
has them) and its shape; for each run that starts, when; for each job that succeeds, how
long it ran, fed to :class:`LearnedRuntimes` under its job set and under its queue and
shape. Each refresh's estimates also read how long each job set's running members have run
(:mod:`armada.scheduling.runtime_model`: siblings running long make a set long). Jobs loaded
from the views at start-up (not replayed) have no hint or shape here and learned runtimes
start empty after a restart: their estimates rest on the job set's new runs and running
members, then the default, until new runs are learned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from armada.model import events as ev
from armada.model.jobs import Job
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling.runtime_model import Evidence, LearnedRuntimes, estimate_runtime, estimate_runtimes
from armada.scheduling.runtimes import RuntimeEstimate, runtime_hint

Shape = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class JobFacts:
    """The facts about one job that its estimate needs (shared between equal jobs)."""

    shape: Shape
    hint: float | None
    deadline: float | None


class RuntimeLearner:
    """Follower listener keeping runtime history and per-job facts; answers estimates."""

    events: ClassVar[tuple[type[ev.Event], ...]] = (ev.JobSubmitted, ev.JobRunning, *ev.RUN_ENDS)

    def __init__(self, default_runtime: float) -> None:
        self.learned = LearnedRuntimes(default_runtime)
        self._known: dict[str, JobFacts] = {}
        self._facts: dict[JobFacts, JobFacts] = {}  # interning: a job set of equal jobs costs one
        #: Running job -> when its current run started running (epoch seconds).
        self.started: dict[str, float] = {}

    def __call__(self, state: ClusterState, event: ev.Event) -> None:
        kind = type(event)
        if kind is ev.JobSubmitted:
            self._submitted(event)  # type: ignore[arg-type]
        elif kind is ev.JobRunning:
            self.started[event.job_id] = event.created.timestamp()
        elif kind is ev.JobLeaseReturned or kind is ev.JobLeaseExpired:
            self.started.pop(event.job_id, None)
        else:
            started = self.started.pop(event.job_id, None)
            known = self._known.pop(event.job_id, None)
            if kind is ev.JobSucceeded and started is not None:
                seconds = event.created.timestamp() - started
                shape = known.shape if known is not None else None
                self.learned.record((event.queue, event.job_set_id), shape, seconds)

    def _submitted(self, event: ev.JobSubmitted) -> None:
        facts = job_facts(event.job)
        self._known[event.job.id] = self._facts.setdefault(facts, facts)
        if len(self._facts) > 4 * len(self._known) + 1024:  # forget facts no active job shares
            self._facts = {f: f for f in self._known.values()}

    def estimate(
        self, known: JobFacts | None, queue: str, job_set_id: str, running: Sequence[float] = ()
    ) -> RuntimeEstimate:
        """A job's total runtime estimate, given its job set's running members' elapsed seconds."""
        return estimate_runtime(self._evidence(known, queue, job_set_id, running))

    def _evidence(
        self, known: JobFacts | None, queue: str, job_set_id: str, running: Sequence[float]
    ) -> Evidence:
        return self.learned.evidence(
            hint=known.hint if known else None,
            job_set=(queue, job_set_id),
            shape=known.shape if known else None,
            running=running,
            deadline=known.deadline if known else None,
        )

    def running(self, state: ClusterState, now: float) -> dict[tuple[str, str], list[float]]:
        """(queue, job set) -> the elapsed seconds of its running members at ``now``."""
        out: dict[tuple[str, str], list[float]] = defaultdict(list)
        extras = state.extras
        for job_id, started in self.started.items():
            of = extras.get(job_id)
            if of is not None:
                out[(of.queue, of.job_set_id)].append(now - started)
        return out

    def asked(self, state: ClusterState, now: float) -> Asked:
        """What every active job's estimate at ``now`` rests on (cheap: read on the event loop;
        :meth:`Asked.estimates` does the work, anywhere)."""
        running = self.running(state, now)
        keys: dict[tuple[str, str, JobFacts | None], int] = {}
        of_job = [
            keys.setdefault((extras.queue, extras.job_set_id, self._known.get(job_id)), len(keys))
            for job_id, extras in state.extras.items()
        ]
        evidence = [
            self._evidence(known, queue, job_set, running.get((queue, job_set), ()))
            for queue, job_set, known in keys
        ]
        return Asked(list(state.extras), of_job, evidence)

    def estimates(self, state: ClusterState, now: float) -> Mapping[str, RuntimeEstimate]:
        """Every active job's estimate at ``now``."""
        return self.asked(state, now).estimates()


@dataclass(frozen=True, slots=True)
class Asked:
    """Active jobs and what their estimates rest on: one :class:`Evidence` per job set and
    facts, shared by its jobs."""

    job_ids: list[str]
    #: Each job's index into ``evidence``.
    of_job: list[int]
    evidence: list[Evidence]

    def estimates(self) -> dict[str, RuntimeEstimate]:
        """Each job's estimate, the grids of all job sets worked out together."""
        found = estimate_runtimes(self.evidence)
        return dict(zip(self.job_ids, map(found.__getitem__, self.of_job), strict=True))


def job_facts(job: Job) -> JobFacts:
    """A job's hint, ``activeDeadlineSeconds`` and shape (queue and requests)."""
    try:
        hint = runtime_hint(job.annotations)
    except ValueError:  # validated at submit; a log older than the rule is read as no hint
        hint = None
    deadline = job.pod_spec.get("activeDeadlineSeconds")
    requests = tuple(sorted(job.scheduling_resource_requirements.requests.items()))
    return JobFacts(
        (job.queue, requests),
        hint,
        float(deadline) if isinstance(deadline, int | float) and deadline > 0 else None,
    )
