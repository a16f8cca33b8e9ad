"""The cap on jobs waiting in one queue (``submission.maxQueuedJobsPerQueue``), counted rarely.

Counting a queue's queued jobs reads up to ``cap`` index entries (a million by default) on a
pooled connection of its own: per submit request of one job that count was the largest
single cost. So each process remembers, per queue, the last count and adds every job it lets
in since. Jobs only leave the queue otherwise (leased, cancelled), so while nobody else adds
to it that sum is an upper bound of the real count, and a request that fits under it fits
under the real count too. A request that might not fit is judged on a fresh count (so every
refusal, and its message, is as before), and a count older than ``max_age`` is taken again,
which bounds what other replicas' submissions and requeued jobs can add unseen: like
concurrent submissions, they may pass the cap by what they added within that second.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from armada.eventstore.job_views import queued_jobs_up_to
from armada.eventstore.store import EventStore
from armada.model.errors import LimitExceeded

#: Seconds a count is trusted before it is taken again.
MAX_AGE = 1.0
#: Queues remembered at most (names come from clients; a queue that does not exist is counted too).
MAX_QUEUES = 4_096


@dataclass
class _Count:
    queued: int
    at: float


class QueuedCap:
    """Admits jobs to queues under ``cap`` queued jobs each (0: no cap); one per process."""

    def __init__(
        self, cap: int, *, max_age: float = MAX_AGE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cap = cap
        self._max_age = max_age
        self._clock = clock
        self._counts: dict[str, _Count] = {}

    async def admit(self, store: EventStore, queue: str, adding: int) -> None:
        """Count ``adding`` jobs into ``queue``, or refuse them (429) if they would pass the cap.

        Checked outside the write lock, so submissions never wait for it. Jobs admitted but
        then not written (the queue is missing, say) only make the next count come sooner.
        """
        if not self.cap:
            return
        now = self._clock()
        known = self._counts.get(queue)
        if known is None or now - known.at > self._max_age or known.queued + adding > self.cap:
            async with store.engine.connect() as conn:
                queued = await queued_jobs_up_to(conn, queue, self.cap)
            if len(self._counts) >= MAX_QUEUES:
                self._counts.clear()
            known = self._counts[queue] = _Count(queued, now)
            if queued + adding > self.cap:
                raise LimitExceeded(
                    f"queue {queue!r} has {queued} queued jobs and takes at most {self.cap} "
                    f"(submission.maxQueuedJobsPerQueue): {adding} more do not fit; "
                    "submit again as jobs start",
                    field="jobRequestItems",
                )
        known.queued += adding
