"""What the forecasts know of runtimes, learned from the log as the follower applies it.

A follower listener: for each job submitted it remembers its hint and deadline (only if it
has them) and its shape; for each run that starts, when; for each job that succeeds, how
long it ran, fed to a :class:`RuntimeHistory` under its job set and under its queue and
shape. Jobs loaded from the views at start-up (not replayed) have no hint or shape here and
learned runtimes start empty after a restart: their estimates fall back to the job set's
runs, then to the default, until new runs are learned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from armada.model import events as ev
from armada.model.jobs import Job
from armada.scheduler.cluster_state import ClusterState
from armada.scheduling.runtimes import RuntimeEstimate, RuntimeHistory, choose_estimate, runtime_hint

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

    def __init__(self, default_runtime: float, history: RuntimeHistory | None = None) -> None:
        self.default_runtime = default_runtime
        self.history = history or RuntimeHistory()
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
                self.history.record(("set", event.queue, event.job_set_id), seconds)
                if known is not None:
                    self.history.record(("shape", known.shape), seconds)

    def _submitted(self, event: ev.JobSubmitted) -> None:
        facts = job_facts(event.job)
        self._known[event.job.id] = self._facts.setdefault(facts, facts)
        if len(self._facts) > 4 * len(self._known) + 1024:  # forget facts no active job shares
            self._facts = {f: f for f in self._known.values()}

    def estimate(self, known: JobFacts | None, queue: str, job_set_id: str) -> RuntimeEstimate:
        """A job's total runtime estimate, from the best basis known."""
        return choose_estimate(
            hint=known.hint if known else None,
            job_set=self.history.sample(("set", queue, job_set_id)),
            shape=self.history.sample(("shape", known.shape)) if known else None,
            deadline=known.deadline if known else None,
            default=self.default_runtime,
        )

    def estimates(self, state: ClusterState) -> Mapping[str, RuntimeEstimate]:
        """Every active job's estimate (jobs of one job set and shape share the work)."""
        out: dict[str, RuntimeEstimate] = {}
        cache: dict[tuple[str, str, JobFacts | None], RuntimeEstimate] = {}
        for job_id, extras in state.extras.items():
            key = (extras.queue, extras.job_set_id, self._known.get(job_id))
            estimate = cache.get(key)
            if estimate is None:
                estimate = cache[key] = self.estimate(key[2], extras.queue, extras.job_set_id)
            out[job_id] = estimate
        return out


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
