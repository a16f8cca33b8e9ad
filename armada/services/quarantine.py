"""Fail the jobs whose stored records cannot be read, so that everything else goes on.

Readers skip a record they cannot decode and report it (:mod:`armada.eventstore.unreadable`).
A job with such a record can never run correctly, and left alone it would wait for ever or
hold its node: this service fails it, through a ``failed`` event with a clear reason, so the
views, the event streams and a replay of the log all say what happened. Every replica may
notice the same record; the job's state is re-read inside the write transaction, so the
job is failed once. An event of a type this version does not know was written by a newer
version (a rolling upgrade is under way): its job is left alone.
"""

from __future__ import annotations

import asyncio

import structlog

from armada.eventstore import views
from armada.eventstore.store import EventStore
from armada.eventstore.unreadable import UnreadableRecord
from armada.model import events as ev
from armada.tasks import cancel_and_wait

log = structlog.get_logger(__name__)


def failure_reason(record: UnreadableRecord) -> str:
    where = f"log event seq {record.key}" if record.kind == "event" else f"stored {record.kind} record"
    return f"the job's {where} cannot be read by this version of Armada ({record.error})"


class Quarantine:
    """Listens to the store's unreadable records and fails the jobs they belong to."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._reasons: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Listen from now on (before the first read, to hear every report)."""
        self.store.unreadable.listeners.append(self._noticed)

    def _noticed(self, record: UnreadableRecord) -> None:
        if not record.job_id or record.newer:  # a newer replica's event: its job is fine
            return
        self._reasons.setdefault(record.job_id, failure_reason(record))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._fail_pending(), name="quarantine")

    async def _fail_pending(self) -> None:
        while self._reasons:
            reasons, self._reasons = self._reasons, {}
            try:
                await self.fail(reasons)
            except Exception as exc:  # the database may be down: try again shortly
                log.warning("cannot fail jobs with unreadable records yet", error=str(exc))
                self._reasons = reasons | self._reasons
                await asyncio.sleep(1.0)

    async def fail(self, reasons: dict[str, str]) -> list[str]:
        """Fail the unfinished ones of these jobs (job id → reason); return the ids failed."""
        failed = []
        async with self.store.transaction() as tx:
            for job_id, row in (await views.jobs_by_id(await tx.views(), list(reasons))).items():
                if row.state.terminal:
                    continue
                tx.append([row.event(ev.JobFailed, reason=reasons[job_id], retryable=False)])
                failed.append(job_id)
        if failed:
            log.warning("failed jobs whose stored records cannot be read", job_ids=failed)
        return failed

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
