"""Which job sets the commits this process saw touched, so that a job-set stream wakes only
for its own job set's events.

Without it every commit woke every open stream, each to find (mostly) nothing for its job
set: with a thousand watchers that was a thousand coroutine turns per commit. This process's
own commits name their job sets (:meth:`JobSetNews.touched`); a commit whose job sets are not
known here (another replica's, heard by ``NOTIFY``; a rewind) wakes every stream, and until
then nothing after it can be ruled out (:attr:`JobSetNews.known_after`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

#: A job set: (queue, job set id).
JobSet = tuple[str, str]
#: Job sets remembered at most; past it the record starts afresh (streams then read once).
MAX_JOB_SETS = 100_000


class JobSetNews:
    def __init__(self, head: int = 0) -> None:
        #: Job set -> the last seq of the newest commit that touched it.
        self._last: dict[JobSet, int] = {}
        #: Every commit after this seq was seen here with its job sets.
        self.known_after = head
        self._waiting: dict[JobSet, asyncio.Event] = {}

    def touched(self, last: int, job_sets: Iterable[JobSet]) -> None:
        """A commit ending at ``last`` touched ``job_sets``: wake their streams."""
        if len(self._last) > MAX_JOB_SETS:
            self.unknown(last)
            return
        for job_set in job_sets:
            self._last[job_set] = last
            waiting = self._waiting.pop(job_set, None)
            if waiting is not None:
                waiting.set()

    def unknown(self, head: int) -> None:
        """Commits up to ``head`` touched job sets not known here: wake every stream."""
        self._last.clear()
        self.known_after = head
        waiting, self._waiting = self._waiting, {}
        for event in waiting.values():
            event.set()

    def since(self, job_set: JobSet, after: int) -> bool:
        """Whether ``job_set`` may have events after seq ``after`` (False: certainly none)."""
        return after < self.known_after or self._last.get(job_set, 0) > after

    def signal(self, job_set: JobSet) -> asyncio.Event:
        """Set at the next commit that may touch ``job_set``."""
        waiting = self._waiting.get(job_set)
        if waiting is None:
            waiting = self._waiting[job_set] = asyncio.Event()
        return waiting
