"""Each job's state as this process's recent appends left it, for status calls.

A status poller (Airflow's sensors: one call per job set every few seconds) asks about jobs
that are flowing; a thousand of them made a thousand queries a second compete with the
appends for the pool's connections. A job's state is a pure function of its last
state-changing event (:data:`~armada.model.lifecycle.JOB_STATE_AFTER`), so while this process
has seen every commit up to the head it knows of, the last such event it appended for a job
says the state the views hold. Jobs not held here, and every job after a commit this process
did not make (another replica's, heard by ``NOTIFY``), are read from the views.

Entries are kept in segments of :data:`SEGMENT_SECONDS`, the newest first in a look-up, and
an entry older than :data:`MAX_AGE_SECONDS` is not used: another replica's retention may
have pruned the job since (retention's ``expireAfter`` counts from the last transition, so
only a setting below that age could).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from armada.model.events import Event
from armada.model.lifecycle import JOB_STATE_AFTER

#: Job entries held at most (over all segments): ~100 bytes each.
CAPACITY = 200_000
#: Longest an entry is used after its event was appended.
MAX_AGE_SECONDS = 600.0
#: Entries recorded within this many seconds share a segment (dropped together).
SEGMENT_SECONDS = 30.0

_STATES = {event_type: state.value for event_type, state in JOB_STATE_AFTER.items()}


class RecentJobStates:
    def __init__(self, clock: Callable[[], float] = time.monotonic, capacity: int = CAPACITY) -> None:
        self._clock = clock
        self._capacity = capacity
        #: (when begun, job id -> state), oldest first.
        self._segments: deque[tuple[float, dict[str, str]]] = deque()
        #: Seq of the last event covered (0: none; the next append starts afresh).
        self.last = 0

    def add(self, first_seq: int, events: Sequence[Event]) -> None:
        """Remember a committed batch; a gap (another replica appended) starts afresh."""
        if first_seq != self.last + 1:
            self.clear()
        now = self._clock()
        if not self._segments or now - self._segments[-1][0] >= SEGMENT_SECONDS:
            self._segments.append((now, {}))
        newest = self._segments[-1][1]
        for event in events:
            state = _STATES.get(event.type)
            if state is not None:
                newest[event.job_id] = state
        self.last = first_seq + len(events) - 1
        held = sum(len(states) for _, states in self._segments)
        while len(self._segments) > 1 and (
            held > self._capacity or self._segments[0][0] < now - MAX_AGE_SECONDS
        ):
            held -= len(self._segments.popleft()[1])

    def clear(self) -> None:
        """Forget everything (the log was pruned or went back in time)."""
        self._segments.clear()
        self.last = 0

    def forget(self, job_ids: Iterable[str]) -> None:
        """Hold nothing more of ``job_ids`` (retention pruned them)."""
        for job_id in job_ids:
            for _, states in self._segments:
                states.pop(job_id, None)

    def states(self, job_ids: Iterable[str], head: int) -> tuple[dict[str, str], list[str]]:
        """The states held of ``job_ids`` and the ids the views must answer for (all of them
        unless every commit up to ``head``, the newest this process knows of, is covered)."""
        if self.last != head or not self._segments:
            return {}, list(job_ids)
        fresh = [
            states for begun, states in reversed(self._segments) if begun >= self._clock() - MAX_AGE_SECONDS
        ]
        found: dict[str, str] = {}
        missing: list[str] = []
        for job_id in job_ids:
            for states in fresh:
                state = states.get(job_id)
                if state is not None:
                    found[job_id] = state
                    break
            else:
                missing.append(job_id)
        return found, missing
