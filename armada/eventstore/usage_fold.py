"""Usage accounting's arithmetic: what each run held, and how long each job waited.

A pure fold over events in log order. Its state is what it must know of a job or run when
a later event needs it (the job's requests, owner and priority class; the run's pool and
start). The live projection starts it from the views as they were before a batch
(:mod:`.usage`); retention starts it empty and feeds it a job's whole history. Either way
the same runs give the same figures, whatever the batching, and all figures are integers,
so sums do not depend on the order they are added in.

- A run's **usage** is, per resource, the units requested times the whole seconds
  (truncated) from the run's ``running`` event to the event that ended it, counted on the
  day the run ended, under how it ended (:data:`OUTCOMES`). Runs that never ran count
  nothing. The pseudo-resource ``jobs`` counts one per run: its job-seconds divided by a
  period's seconds is the average number of running jobs.
- A run's **wait** is the time from the job being queued (submitted, or requeued) to the
  run's lease, counted on the day of the lease in a bucket of :data:`WAIT_BUCKETS`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple, Protocol

from armada.model import events as ev
from armada.model.jobs import ResourceRequirements
from armada.model.quantities import QuantityError, resolution_of, to_units

#: How a run ended, by the event that ended it (``leaseReturned`` is ``retried`` when the
#: run had started and failed, and the job was queued again).
OUTCOMES = ("succeeded", "failed", "cancelled", "preempted", "retried", "returned", "expired")
#: The outcomes whose work is lost: the job has to run again, or never finishes.
LOST_OUTCOMES = frozenset({"preempted", "retried", "returned", "expired"})
#: The pseudo-resource counting one per run (in thousandths: :func:`resolution`).
JOBS = "jobs"
_MICROSECOND = timedelta(microseconds=1)
_MILLISECOND = timedelta(milliseconds=1)
#: Upper bounds (seconds) of the wait buckets; the last bucket is everything longer.
WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800)


class Cell(NamedTuple):
    """Where a figure is rolled up: day (``YYYY-MM-DD``, UTC) x queue x owner x pool x priority class."""

    day: str
    queue: str
    owner: str
    pool: str
    priority_class: str


class JobFacts(NamedTuple):
    queue: str
    owner: str
    priority_class: str
    #: Units requested per resource (``None``: not known yet, see :class:`UsageFold`).
    requests: dict[str, int] | None
    #: When the job was last queued, while it waits (``None`` once leased).
    queued_since: datetime | None


class RunFacts(NamedTuple):
    pool: str
    started: datetime | None


class Deltas:
    """Figures to add: usage per (cell, outcome, resource), waits per (cell, bucket)."""

    def __init__(self) -> None:
        self.usage: dict[tuple[Cell, str, str], int] = defaultdict(int)
        #: (leases, milliseconds waited) per cell and bucket.
        self.waits: dict[tuple[Cell, int], list[int]] = defaultdict(lambda: [0, 0])

    def __bool__(self) -> bool:
        return bool(self.usage or self.waits)


class _HasRequests(Protocol):
    @property
    def scheduling_resource_requirements(self) -> ResourceRequirements: ...


def requests_of(job: _HasRequests) -> dict[str, int]:
    """Units requested per resource (a quantity that cannot be read counts nothing)."""
    units: dict[str, int] = {}
    for resource, quantity in job.scheduling_resource_requirements.requests.items():
        try:
            units[resource] = to_units(resource, quantity)
        except QuantityError:
            continue
    return units


def resolution(resource: str) -> Decimal:
    """The size of one unit of ``resource`` in the rollups."""
    return Decimal("0.001") if resource == JOBS else resolution_of(resource)


#: Days by their ordinal: a fold names the same few days for thousands of runs and leases.
_DAYS: dict[int, str] = {}


def day_of(moment: datetime) -> str:
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    ordinal = moment.toordinal()
    day = _DAYS.get(ordinal)
    if day is None:
        if len(_DAYS) >= 1024:
            _DAYS.clear()
        day = _DAYS[ordinal] = moment.date().isoformat()
    return day


def wait_bucket(seconds: float) -> int:
    """Index of the bucket ``seconds`` of waiting falls in."""
    return bisect_left(WAIT_BUCKETS, seconds)


def _outcome(event: ev.Event) -> str | None:
    match event:
        case ev.JobSucceeded():
            return "succeeded"
        case ev.JobFailed():
            return "failed"
        case ev.JobCancelled():
            return "cancelled"
        case ev.JobPreempted():
            return "preempted"
        case ev.JobLeaseReturned():
            return "retried" if event.run_attempted else "returned"
        case ev.JobLeaseExpired():
            return "expired"
    return None


class UsageFold:
    """Folds events into :class:`Deltas`, starting from ``jobs`` and ``runs``: the facts
    known before the first event (a run ending with its job's requests unknown counts
    only its ``jobs`` figure)."""

    def __init__(
        self, jobs: dict[str, JobFacts] | None = None, runs: dict[str, RunFacts] | None = None
    ) -> None:
        self.jobs = jobs or {}
        self.runs = runs or {}
        self.deltas = Deltas()

    def add(self, event: ev.Event) -> None:
        kind = type(event)
        fold = _FOLDS.get(kind)
        if fold is None:
            fold = _FOLDS[kind] = _fold_of(event)
        fold(self, event)

    def _submitted(self, event: ev.JobSubmitted) -> None:
        job = event.job
        self.jobs[event.job_id] = JobFacts(
            job.queue, job.owner, job.priority_class_name, _requests_of(job), event.created
        )

    def _queued(self, event: ev.JobQueued) -> None:
        facts = self.jobs.get(event.job_id)
        if facts is not None:
            requests = _requests_of(event.job) if event.job is not None else facts.requests
            self.jobs[event.job_id] = JobFacts(
                facts.queue, facts.owner, facts.priority_class, requests, event.created
            )

    def _running(self, event: ev.JobRunning) -> None:
        run = self.runs.get(event.run_id)
        if run is not None:
            self.runs[event.run_id] = RunFacts(run.pool, event.created)

    def _run_ended(self, event: ev.Event) -> None:
        outcome = _outcome(event)
        if outcome is not None and event.run_id:
            self._ended(event, outcome)

    def _other(self, event: ev.Event) -> None:
        """Events the rollups do not count."""

    def _leased(self, event: ev.JobLeased) -> None:
        self.runs[event.run_id] = RunFacts(event.pool, None)
        facts = self.jobs.get(event.job_id)
        if facts is None or facts.queued_since is None:
            return
        cell = Cell(day_of(event.created), facts.queue, facts.owner, event.pool, facts.priority_class)
        waited = event.created - facts.queued_since
        figures = self.deltas.waits[cell, wait_bucket(waited.total_seconds())]
        figures[0] += 1
        figures[1] += waited // _MILLISECOND
        self.jobs[event.job_id] = JobFacts(
            facts.queue, facts.owner, facts.priority_class, facts.requests, None
        )

    def _ended(self, event: ev.Event, outcome: str) -> None:
        run = self.runs.pop(event.run_id, None)
        facts = self.jobs.get(event.job_id)
        if run is None or run.started is None or facts is None:
            return
        micros = (event.created - run.started) // _MICROSECOND
        if micros <= 0:
            return
        cell = Cell(day_of(event.created), facts.queue, facts.owner, run.pool, facts.priority_class)
        usage = self.deltas.usage
        for resource, units in (facts.requests or {}).items():
            if resource != JOBS and (amount := units * micros // 1_000_000):
                usage[cell, outcome, resource] += amount
        if amount := 1000 * micros // 1_000_000:
            usage[cell, outcome, JOBS] += amount


#: How :meth:`UsageFold.add` folds each type of event (filled on first sight of a type).
_FOLDS: dict[type[ev.Event], Callable[[UsageFold, Any], None]] = {}


def _fold_of(event: ev.Event) -> Callable[[UsageFold, Any], None]:
    """The method folding events of ``event``'s type."""
    match event:
        case ev.JobSubmitted():
            return UsageFold._submitted
        case ev.JobQueued():
            return UsageFold._queued
        case ev.JobLeased():
            return UsageFold._leased
        case ev.JobRunning():
            return UsageFold._running
        case ev.JobSucceeded() | ev.JobFailed() | ev.JobCancelled() | ev.JobPreempted():
            return UsageFold._run_ended
        case ev.JobLeaseReturned() | ev.JobLeaseExpired():
            return UsageFold._run_ended
    return UsageFold._other


#: Units requested, by the requests as listed (jobs of one kind share them).
_REQUESTS: dict[tuple[tuple[str, str], ...], dict[str, int]] = {}


def _requests_of(job: _HasRequests) -> dict[str, int]:
    """:func:`requests_of`, remembered for the requests seen last (never changed by callers)."""
    key = tuple(job.scheduling_resource_requirements.requests.items())
    units = _REQUESTS.get(key)
    if units is None:
        if len(_REQUESTS) >= 1024:
            _REQUESTS.clear()
        units = _REQUESTS[key] = requests_of(job)
    return units
