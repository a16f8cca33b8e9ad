"""Development mode's job printout: one line per job state change, for a person at a terminal.

``armada serve --dev`` runs jobs on the developer's machine; what they want to see is what
happens to their jobs (``job running  job_id=… queue=… job_set=…``), not the executor's
HTTP calls. The printout follows the event log from the moment the server starts, like a
job-set watcher of every job set.
"""

from __future__ import annotations

import structlog

from armada.eventstore.store import EventStore
from armada.model import events as ev
from armada.model.lifecycle import JOB_STATE_AFTER

log = structlog.get_logger("armada.jobs")

#: Events read per query, and the longest wait for a change before asking the log again
#: (another process may append without waking this one).
PAGE = 1000
IDLE_WAIT = 5.0


def print_job_event(event: ev.Event) -> None:
    """One line if the event changes its job's state (a submission is logged as its first
    ``queued``, which follows in the same transaction)."""
    state = JOB_STATE_AFTER.get(event.type)
    if state is None or not event.job_id or isinstance(event, ev.JobSubmitted):
        return
    fields: dict[str, object] = {"job_id": event.job_id, "queue": event.queue, "job_set": event.job_set_id}
    if isinstance(event, ev.JobQueued) and event.attempts:
        fields["attempt"] = event.attempts + 1
    reason = getattr(event, "reason", "")
    if reason:
        fields["reason"] = reason
    log.info(f"job {state.value.lower()}", **fields)


async def print_job_changes(store: EventStore) -> None:
    """Log the job state changes committed from now on, until cancelled."""
    after = await store.head()
    while True:
        page = await store.read(after, limit=PAGE)
        for stored in page:
            print_job_event(stored.event)
        if page:
            after = page[-1].seq
        if len(page) < PAGE:
            await store.wait_for_change(after, timeout=IDLE_WAIT)
