"""Which jobs this process's recent appends touched, to re-check reads made before a write.

A write that reads the views outside the serialised append (see
:meth:`~armada.eventstore.store.EventStore.append_optimistically`) must learn, once it holds
the lock, whether any job it read has changed since. When every append in between was made
by this process, the answer is a set intersection here instead of a query; a gap (another
replica appended, or the read is older than what is kept) answers ``None`` and the caller
asks the database.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Set
from typing import NamedTuple

#: Sequence numbers of history kept: far more than a write waits for the lock under load.
SPAN = 200_000


class _Append(NamedTuple):
    first_seq: int
    last_seq: int
    job_ids: frozenset[str]


class ChangedJobs:
    def __init__(self, span: int = SPAN) -> None:
        self._appends: deque[_Append] = deque()
        self._span = span

    def add(self, first_seq: int, last_seq: int, job_ids: Iterable[str]) -> None:
        """Remember a committed append; a gap (another replica appended) starts afresh."""
        if self._appends and self._appends[-1].last_seq != first_seq - 1:
            self._appends.clear()
        self._appends.append(_Append(first_seq, last_seq, frozenset(job_ids)))
        while self._appends[0].last_seq < last_seq - self._span:
            self._appends.popleft()

    def among(self, job_ids: Set[str], after_seq: int, head: int) -> set[str] | None:
        """Those of ``job_ids`` changed after ``after_seq`` up to ``head``; ``None`` if unknown."""
        if after_seq >= head:
            return set()
        appends = self._appends
        if not appends or appends[-1].last_seq != head or appends[0].first_seq > after_seq + 1:
            return None
        changed: set[str] = set()
        for append in reversed(appends):
            if append.last_seq <= after_seq:
                break
            changed |= append.job_ids & job_ids
        return changed
