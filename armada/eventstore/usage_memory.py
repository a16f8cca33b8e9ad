"""What usage accounting learnt of jobs and runs from this process's own appends.

Counting a batch (:func:`armada.eventstore.usage.count`) needs, for each lease, its job's
owner, priority class and queueing time, and for each run that ends, its pool, start and
job's requests: facts about events of earlier batches. Read from the views, they cost a
query under the append lock per batch (a lease batch reads every leased job's row; a batch
of run reports every run's row and job spec). The fold that counted those earlier batches
already held them, so the store keeps them (:class:`UsageMemory`) for as long as it has
made every append since: a write group whose log head is the one the memory was left at
starts from it (:class:`KnownFacts`), and a group that finds another head (another replica
or worker appended, or the log went back) forgets it and reads the views, as before.

A fact is kept only when complete (a job's requests known), and a job's facts are dropped
once it ends (or when too many are held): a fact not held is read from the views, so
holding less only costs a read.
"""

from __future__ import annotations

from collections.abc import Iterable

from armada.eventstore.usage_fold import JobFacts, RunFacts, UsageFold
from armada.model import events as ev

#: Jobs held at most; past it the memory starts again empty (a restart of it costs reads).
MAX_JOBS = 200_000
#: Events after which a job has no further use for its facts.
_JOB_ENDS = (ev.JobSucceeded, ev.JobFailed, ev.JobCancelled)
#: Whether events of a type end a run, and their job (filled on first sight of a type: a dict
#: lookup costs less than two ``isinstance`` checks per event, under the append lock).
_ENDS: dict[type[ev.Event], tuple[bool, bool]] = {}


class KnownFacts:
    """One write group's view of the facts: the memory's (if it is current for the group's
    head) overlaid with what the group's own batches learnt, not yet committed."""

    def __init__(self, jobs: dict[str, JobFacts], runs: dict[str, RunFacts]) -> None:
        self._base_jobs = jobs
        self._base_runs = runs
        #: The group's changes: a fact, or ``None`` for one forgotten.
        self.jobs: dict[str, JobFacts | None] = {}
        self.runs: dict[str, RunFacts | None] = {}

    def job(self, job_id: str) -> JobFacts | None:
        if job_id in self.jobs:
            return self.jobs[job_id]
        return self._base_jobs.get(job_id)

    def run(self, run_id: str) -> RunFacts | None:
        if run_id in self.runs:
            return self.runs[run_id]
        return self._base_runs.get(run_id)

    def record(self, fold: UsageFold, events: Iterable[ev.Event]) -> None:
        """Keep what ``fold`` holds after counting ``events``: runs it still follows, jobs
        whose requests it knows; forget the runs and jobs that ended."""
        for job_id, facts in fold.jobs.items():
            if facts.requests is not None:
                self.jobs[job_id] = facts
        for run_id, run in fold.runs.items():
            self.runs[run_id] = run
        for event in events:
            ends = _ENDS.get(type(event))
            if ends is None:
                ends = _ENDS[type(event)] = (isinstance(event, ev.RUN_ENDS), isinstance(event, _JOB_ENDS))
            run_ends, job_ends = ends
            if run_ends and event.run_id and event.run_id not in fold.runs:
                self.runs[event.run_id] = None
            if job_ends:
                self.jobs[event.job_id] = None


class UsageMemory:
    """The facts of jobs and runs as of log head :attr:`head`, which this process's appends
    left (see the module)."""

    def __init__(self) -> None:
        #: The head the facts are current for (-1: none yet).
        self.head = -1
        self._jobs: dict[str, JobFacts] = {}
        self._runs: dict[str, RunFacts] = {}

    def facts_at(self, head: int) -> KnownFacts:
        """The facts for a group that began at log head ``head`` (none held unless current)."""
        if head != self.head:
            return KnownFacts({}, {})
        return KnownFacts(self._jobs, self._runs)

    def committed(self, head: int, last: int, known: KnownFacts | None) -> None:
        """A group that began at ``head`` committed up to ``last``, having learnt ``known``."""
        if head != self.head or len(self._jobs) > MAX_JOBS:
            self._jobs, self._runs = {}, {}
        self.head = last
        if known is None:
            return
        for job_id, facts in known.jobs.items():
            if facts is None:
                self._jobs.pop(job_id, None)
            else:
                self._jobs[job_id] = facts
        for run_id, run in known.runs.items():
            if run is None:
                self._runs.pop(run_id, None)
            else:
                self._runs[run_id] = run

    def forget(self) -> None:
        """Hold nothing (the log went back, or jobs were deleted)."""
        self.head = -1
        self._jobs, self._runs = {}, {}
