"""The newest events this process appended, kept decoded for in-process readers.

The scheduler's log follower reads back every event right after it commits; when those
events were appended by this same process, handing over the objects saves a query and a
decode per event. Only a contiguous run of sequence numbers reaching the newest head this
process knows of is served, so events other replicas appended are read from the database.

Job-set event streams read here too, through an index by job set: each watcher's read after
a commit is then a dictionary look-up instead of a query, so hundreds of watchers cost one
append's worth of work each rather than hundreds of queries competing for the pool's
connections with the scheduler and the lease calls.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import NamedTuple, cast

from armada.model.events import AnyEvent, Event, ReadEvent

#: Events kept (up to twice as many between trims); readers further behind use the database.
CAPACITY = 10_000


class StoredEvent(NamedTuple):
    seq: int
    event: ReadEvent


class RecentEvents:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._events: list[StoredEvent] = []
        #: The same events by (queue, job set id), oldest first.
        self._job_sets: dict[tuple[str, str], list[StoredEvent]] = {}
        self._capacity = capacity

    def add(self, first_seq: int, events: Sequence[Event]) -> None:
        """Remember a committed batch; a gap (another replica appended) starts afresh."""
        if self._events and self._events[-1].seq != first_seq - 1:
            self._events.clear()
            self._job_sets.clear()
        added = [
            StoredEvent(first_seq + offset, cast(AnyEvent, event)) for offset, event in enumerate(events)
        ]
        self._events += added
        if len(self._events) > 2 * self._capacity:  # trim in bulk: amortised O(1) per event
            del self._events[: len(self._events) - self._capacity]
            self._job_sets.clear()
            added = self._events
        for stored in added:
            key = (stored.event.queue, stored.event.job_set_id)
            held = self._job_sets.get(key)
            if held is None:
                self._job_sets[key] = [stored]
            else:
                held.append(stored)

    def holds_up_to(self, seq: int) -> bool:
        """Whether an event kept is at or before ``seq``."""
        return bool(self._events) and self._events[0].seq <= seq

    def of_job_set(
        self, queue: str, job_set_id: str, after_seq: int, until_seq: int, limit: int
    ) -> list[StoredEvent] | None:
        """The job set's events after ``after_seq`` up to ``until_seq``, if every event of
        that range is held (``None``: read the database)."""
        if not self._events or after_seq < self._events[0].seq - 1 or self._events[-1].seq < until_seq:
            return None
        held = self._job_sets.get((queue, job_set_id), [])
        start = bisect.bisect_right(held, after_seq, key=lambda stored: stored.seq)
        end = bisect.bisect_right(held, until_seq, key=lambda stored: stored.seq)
        return held[start : min(end, start + limit)]

    def after(self, after_seq: int, known_head: int, limit: int) -> list[StoredEvent] | None:
        """Events after ``after_seq`` if held without a gap up to ``known_head``; else ``None``."""
        if not self._events:
            return None
        first, last = self._events[0].seq, self._events[-1].seq
        if after_seq < first - 1 or after_seq >= last or last < known_head:
            return None
        start = after_seq + 1 - first
        return self._events[start : start + limit]
