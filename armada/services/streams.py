"""Job-set event streams: replay a job set's events, then optionally follow new ones.

Events are shown as upstream's clients expect them (:func:`as_streamed`). Followers do not
poll: each waits on the store's change notification for its job set (this process's commits
name the job sets they touched; another replica's, heard by PostgreSQL ``LISTEN``, wake every
stream) and reads only then, so an event reaches its watchers one read after it commits and
a commit costs nothing to the streams of other job sets.

Access is not judged once: a stream outlives the request that opened it, and a queue's
owners may withdraw ``watch`` while it is open. Each page is delivered only after the
transport's re-check (:data:`AccessCheck`) still allows it; otherwise the stream ends with
:class:`PermissionDenied` before anything more is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import structlog

from armada.eventstore.store import EventStore, StoredEvent
from armada.model import events as ev
from armada.model.errors import HistoryRewound, InvalidRequest, NotFound, PermissionDenied
from armada.model.events import EventDecoder, UnreadableEvent, decode_event
from armada.services.queues import get_queue

log = structlog.get_logger(__name__)

PAGE = 1000

#: Whether the stream's caller may still watch its queue (asked before each page is sent).
AccessCheck = Callable[[], Awaitable[bool]]
#: Runs a wait for the next page: its result, or None once the server is stopping.
Interrupt = Callable[[Coroutine[Any, Any, list[StoredEvent] | None]], Awaitable[list[StoredEvent] | None]]


def as_streamed(stored: StoredEvent) -> StoredEvent:
    """An event as clients see it on the stream (REST and gRPC), upstream's way.

    In the log a failure the retry engine retries is the run's ``leaseReturned`` (carrying
    the category and the decision) followed by the job's ``queued``: a ``failed`` event
    there ends the job in every view. Upstream's stream shows such a run as ``failed`` with
    ``retryable: true``, then the requeue; consumers must read the flag. Only the stream
    translates: the log, the views and the job's state are unchanged.
    """
    event = stored.event
    if not isinstance(event, ev.JobLeaseReturned) or not event.retried_failure:
        return stored
    failed = ev.JobFailed(
        created=event.created,
        queue=event.queue,
        job_set_id=event.job_set_id,
        job_id=event.job_id,
        run_id=event.run_id,
        reason=event.reason,
        exit_code=event.exit_code,
        retryable=True,
        cluster_id=event.cluster_id,
        node_name=event.node_name,
        failure_category=event.failure_category,
        failure_subcategory=event.failure_subcategory,
        retry_policy=event.retry_policy,
    )
    return StoredEvent(stored.seq, failed)


#: How long a follower waits for a change before checking again (covers missed wake-ups).
IDLE_WAIT = 5.0


def parse_message_id(value: str) -> int:
    """Message ids are the log's sequence numbers; empty means "from the start"."""
    if not value:
        return 0
    if not value.isdigit() or len(value) > 18:  # sequence numbers are 64-bit
        raise InvalidRequest(
            f"fromMessageId {value!r} is not a message id from this server", field="fromMessageId"
        )
    return int(value)


async def check_target(store: EventStore, queue: str, job_set_id: str, *, error_if_missing: bool) -> None:
    """Refuse a stream on a queue that does not exist, and (``error_if_missing``, upstream's
    ``errorIfMissing``) on a job set without events: 404 either way.

    The permission guard lets a caller through when the queue does not exist, but a stream
    on it would deliver the events of whoever creates it later.
    """
    try:
        await get_queue(store, queue)
    except NotFound:
        raise NotFound(f"queue {queue!r} does not exist", field="queue") from None
    if error_if_missing and not await store.read(0, queue=queue, job_set_id=job_set_id, limit=1):
        raise NotFound(f"job set {job_set_id!r} of queue {queue!r} has no events", field="jobSetId")


async def until_stopped(
    pages: AsyncGenerator[list[StoredEvent], None], until: Interrupt | None = None
) -> AsyncIterator[list[StoredEvent]]:
    """:func:`job_set_pages` (closing it when the caller stops). With ``until`` (the server's
    ``unless_stopping``), a stream waiting for its next page ends when the server stops, so
    that a watcher holds no stopping replica (it resumes at another from its last message
    id) and a rolling upgrade restarts each replica at once."""
    try:
        while True:
            ahead = anext(pages, None)
            page = await (until(ahead) if until is not None else ahead)
            if page is None:
                return
            yield page
    finally:
        await pages.aclose()


async def job_set_pages(
    store: EventStore,
    queue: str,
    job_set_id: str,
    *,
    after: int = 0,
    watch: bool = False,
    decode: EventDecoder = decode_event,
    allowed: AccessCheck | None = None,
) -> AsyncGenerator[list[StoredEvent], None]:
    """The job set's events after message id ``after``, oldest first, a page at a time
    (transports pay per await and per write: they send a page at once).

    Without ``watch`` the stream ends at the last event committed when it started; with it
    the stream never ends (the caller stops iterating when its client goes away). While the
    caller sends one page, the next is already being read, so that a large job set streams
    at the transport's pace rather than the database's. ``decode`` is
    :meth:`EventStore.read`'s. ``allowed`` is asked before each page is yielded: when it
    says no, :class:`PermissionDenied` ends the stream and the page is not sent.
    """
    rewinds = store.notifier.rewinds  # before the head is read: a rewind after it is seen
    known = store.notifier.head
    # A watcher only starts from the head: the one this process knows spares a query per
    # stream opened (a thousand watchers reconnecting after a restart), unless the client
    # resumes past it. A stream that ends must end at what has committed: the log's head.
    head = known if watch and after <= known else await store.head()
    after = _resume_point(after, head, queue, job_set_id)
    delivered = after  # the client's position: the last message id it was given
    while True:
        ahead: asyncio.Future[list[StoredEvent]] | None = asyncio.ensure_future(
            _page(store, queue, job_set_id, after, head, decode)
        )
        try:
            while ahead is not None:
                page = await ahead
                ahead = None
                if len(page) == PAGE:
                    after = page[-1].seq
                    ahead = asyncio.ensure_future(_page(store, queue, job_set_id, after, head, decode))
                events = [
                    as_streamed(stored) for stored in page if not isinstance(stored.event, UnreadableEvent)
                ]
                if events:  # an unreadable one is reported by the store and skipped
                    if allowed is not None and not await allowed():
                        raise PermissionDenied(
                            f"the caller may no longer watch queue {queue!r}; the stream ends", field="queue"
                        )
                    delivered = events[-1].seq
                    yield events
        finally:
            if ahead is not None:  # the caller stopped reading: drop the page being read
                ahead.cancel()
                ahead.add_done_callback(_forget)
        after = max(after, head)
        if not watch:
            return
        changed = await store.wait_for_job_set(queue, job_set_id, head, IDLE_WAIT, rewinds=rewinds)
        rewound_to, rewinds = store.notifier.lowest_since(rewinds), store.notifier.rewinds
        if rewound_to is not None:  # the log went back in time (new events may follow already)
            if delivered > rewound_to:  # behind ids this stream gave out: they are being reused
                raise HistoryRewound(
                    f"the event log went back in time to message id {rewound_to} (the database "
                    f"was restored): ids after it that this stream delivered are being given to "
                    f"new events; resume from {rewound_to}",
                    field="fromMessageId",
                )
            after = min(after, rewound_to)  # what it scanned past there held none of its events
        if rewound_to is None and (changed > head or store.notifier.listening):
            head = max(head, changed)
        else:  # no wake-up and no listener (SQLite): another process may have appended; ask the log
            # (with a listener, a thousand idle streams timing out together would each query it)
            head = await store.head()


def _resume_point(after: int, head: int, queue: str, job_set_id: str) -> int:
    """Where a new stream starts: ``after``, unless the log went back in time behind it (the
    database was restored). The events past the restored head that the client saw are gone,
    and new ones reuse their numbers: the stream starts from the head, so that it delivers
    them. (A stream already open when that happens ends with :class:`HistoryRewound`, so that
    its client knows; it then resumes here.)"""
    if after <= head:
        return after
    log.warning(
        "stream position is ahead of the log (database restored?): resuming from the log's head",
        queue=queue,
        job_set_id=job_set_id,
        message_id=after,
        head=head,
    )
    return head


async def _page(
    store: EventStore, queue: str, job_set_id: str, after: int, until: int, decode: EventDecoder
) -> list[StoredEvent]:
    return await store.read(
        after, queue=queue, job_set_id=job_set_id, until_seq=until, limit=PAGE, decode=decode
    )


def _forget(read: asyncio.Future[list[StoredEvent]]) -> None:
    """Retrieve a dropped read's outcome, so that its failure is not logged as unhandled."""
    if not read.cancelled():
        read.exception()
