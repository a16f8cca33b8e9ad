"""Matching each job's events against the expected ones: an ordered subsequence by type.

Events of other types are ignored; a terminal event that is not the next expected one
fails the job at once, since nothing more will happen to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from armada.testsuite.spec import TERMINAL_EVENTS


@dataclass
class JobProgress:
    expected: list[str]
    seen: list[str] = field(default_factory=list)
    matched: int = 0
    failure: str = ""

    @property
    def done(self) -> bool:
        return self.matched == len(self.expected)

    def add(self, kind: str) -> None:
        self.seen.append(kind)
        if self.done or self.failure:
            return
        if kind == self.expected[self.matched]:
            self.matched += 1
        elif kind in TERMINAL_EVENTS:
            self.failure = f"unexpected {kind} while waiting for {self.expected[self.matched]}"

    def describe(self) -> str:
        waiting = f"waiting for {self.expected[self.matched]}" if not self.done else "complete"
        return f"saw [{', '.join(self.seen)}], {waiting}"


class Progress:
    """Every job of a case; events may arrive before the submission response names the jobs."""

    def __init__(self, expected: list[str]) -> None:
        self.expected = expected
        self.jobs: dict[str, JobProgress] = {}
        self.submitted: list[str] = []

    def add(self, job_id: str, kind: str) -> None:
        self.jobs.setdefault(job_id, JobProgress(self.expected)).add(kind)

    def expect(self, job_ids: list[str]) -> None:
        for job_id in job_ids:
            self.jobs.setdefault(job_id, JobProgress(self.expected))
        self.submitted += job_ids

    def all_saw(self, kind: str) -> bool:
        return all(kind in self.jobs[job_id].seen for job_id in self.submitted)

    def failure(self) -> str:
        """The first failed job's story, or ``""``."""
        for job_id in self.submitted:
            job = self.jobs[job_id]
            if job.failure:
                return f"job {job_id}: {job.failure} (saw [{', '.join(job.seen)}])"
        return ""

    def passed(self) -> bool:
        return all(self.jobs[job_id].done for job_id in self.submitted)

    def summary(self) -> str:
        """Where the first unfinished job got to (for a timeout)."""
        unfinished = [job_id for job_id in self.submitted if not self.jobs[job_id].done]
        if not unfinished:
            return "all submitted jobs complete"
        first = unfinished[0]
        story = self.jobs[first].describe()
        return f"{len(unfinished)} of {len(self.submitted)} jobs unfinished; job {first} {story}"
