"""Change notification: wake waiters (event streams, the scheduler) when events commit.

In one process :class:`ChangeNotifier` is enough. With PostgreSQL a :class:`PgListener`
also listens for ``NOTIFY`` so that appends made by other replicas wake this one.
:class:`Signals` carries named wake-ups that are not log appends (a log request for an
executor, its answer) the same way, on a second channel.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection

import psycopg
import structlog

from armada.eventstore.dialects import NOTIFY_CHANNEL, SIGNAL_CHANNEL, libpq_conninfo
from armada.eventstore.job_set_news import JobSet, JobSetNews
from armada.tasks import cancel_and_wait

log = structlog.get_logger(__name__)


class ChangeNotifier:
    """Tracks the highest committed sequence number and wakes whoever waits for more.

    This process's own appends are announced by the appender (:meth:`publish`) once their
    events are held in memory for in-process readers. PostgreSQL's ``NOTIFY`` of the same
    commit (:meth:`heard`) reaches the listener before the appender's coroutine resumes from
    its ``COMMIT``; passing it on sent the readers it woke to the database for events they
    would have been handed from memory a moment later.
    """

    def __init__(self, head: int = 0) -> None:
        self._head = head
        self._changed = asyncio.Event()
        #: Last seq of this process's group being committed (0: none): the appender announces it.
        self._own_pending = 0
        #: The newest seq heard while it was withheld as this process's own.
        self._withheld = 0
        #: How many times the log went back in time (:meth:`rewind`).
        self.rewinds = 0
        #: The head each of those went back to, in order.
        self.rewound_to: list[int] = []
        #: Which job sets the commits seen here touched (job-set streams wait on their own).
        self.job_sets = JobSetNews(head)
        #: Whether a listener hears every other process's commits (PostgreSQL's ``NOTIFY``,
        #: while connected): then a wait that timed out saw every commit there was.
        self.listening = False

    @property
    def head(self) -> int:
        return self._head

    def lowest_since(self, rewinds: int) -> int | None:
        """The lowest head the log went back to since the count was ``rewinds`` (None: it did not)."""
        return min(self.rewound_to[rewinds:], default=None)

    def committing(self, last: int) -> None:
        """This process is committing a group whose last event is ``last``."""
        self._own_pending = last

    def committed(self) -> None:
        """The group :meth:`committing` announced has ended, committed (and published) or not:
        a notification withheld meanwhile that was not its own is passed on now."""
        self._own_pending = 0
        self.publish(self._withheld)

    def heard(self, seq: int) -> None:
        """A ``NOTIFY`` (or the listener's first look at the log) says ``seq`` is committed.

        While this process holds the append lock no other can append, so a seq up to its
        committing group's last is that group's own: the appender publishes it itself.
        """
        if seq <= self._own_pending:
            self._withheld = max(self._withheld, seq)
            return
        self.publish(seq)

    def publish(self, seq: int, *, first: int = 0, job_sets: Collection[JobSet] | None = None) -> None:
        """``seq`` is committed; ``job_sets``: those its commit (seqs ``first`` to ``seq``,
        this process's own) touched, if known."""
        if seq > self._head:
            if job_sets is not None and first == self._head + 1:
                self.job_sets.touched(seq, job_sets)
            else:  # another replica's commit, or one after such: any job set may have news
                self.job_sets.unknown(seq)
            self._head = seq
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    def rewind(self, head: int) -> None:
        """The log went back in time (the database was restored): its head is ``head`` now.
        Waiters that passed :attr:`rewinds` wake, to look where the log is."""
        self._head = min(self._head, head)
        self._withheld = min(self._withheld, head)
        self.rewinds += 1
        self.rewound_to.append(head)
        self.job_sets.unknown(head)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait(self, after_seq: int, timeout: float | None = None, *, rewinds: int | None = None) -> int:
        """Wait until the head passes ``after_seq`` (or ``timeout``, or a rewind since the
        count ``rewinds``, if given); return the head."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._head <= after_seq and rewinds in (None, self.rewinds):
                    await self._changed.wait()
        return self._head

    async def wait_job_set(self, job_set: JobSet, after_seq: int, timeout: float, *, rewinds: int) -> int:
        """As :meth:`wait`, but only a commit that may touch ``job_set`` ends the wait."""
        news = self.job_sets
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while rewinds == self.rewinds and not (
                    self._head > after_seq and news.since(job_set, after_seq)
                ):
                    await news.signal(job_set).wait()
        return self._head


class Signals:
    """Named wake-ups: :meth:`publish` sets every event :meth:`subscribe` handed out for a topic.

    Subscribe (or clear the event) *before* looking for the news the signal announces, then
    wait on the event: a publish in between is never missed. A subscription lasts until
    :meth:`unsubscribe`.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def subscribe(self, topic: str) -> asyncio.Event:
        event = asyncio.Event()
        self._waiting.setdefault(topic, set()).add(event)
        return event

    def unsubscribe(self, topic: str, event: asyncio.Event) -> None:
        waiting = self._waiting.get(topic)
        if waiting is not None:
            waiting.discard(event)
            if not waiting:
                del self._waiting[topic]

    def publish(self, topic: str) -> None:
        for event in self._waiting.get(topic, ()):
            event.set()

    def publish_all(self) -> None:
        """Wake every subscriber: signals may have been missed (the listener reconnected)."""
        for waiting in self._waiting.values():
            for event in waiting:
                event.set()


class PgListener:
    """Feeds PostgreSQL ``NOTIFY`` messages into a :class:`ChangeNotifier` (and
    :class:`Signals`), reconnecting."""

    def __init__(
        self, url: str, notifier: ChangeNotifier, signals: Signals | None = None, *, max_backoff: float = 5.0
    ) -> None:
        self._conninfo = libpq_conninfo(url)
        self._notifier = notifier
        self._signals = signals
        self._max_backoff = max_backoff
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="pg-listener")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    if self._signals is not None:
                        await conn.execute(f"LISTEN {SIGNAL_CHANNEL}")
                    # Anything committed while we were not listening: catch up once.
                    cursor = await conn.execute("SELECT coalesce(max(seq), 0) FROM events")
                    row = await cursor.fetchone()
                    self._notifier.heard(int(row[0]) if row else 0)
                    self._notifier.listening = True
                    if self._signals is not None:
                        self._signals.publish_all()  # and any signal sent meanwhile
                    self.connected.set()
                    backoff = 0.1
                    async for message in conn.notifies():
                        if message.channel == SIGNAL_CHANNEL and self._signals is not None:
                            self._signals.publish(message.payload)
                        else:
                            self._notifier.heard(int(message.payload))
            except (psycopg.Error, OSError) as exc:
                self.connected.clear()
                self._notifier.listening = False
                log.warning("event listener disconnected", error=str(exc), retry_in=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
