"""What ``armada watch`` does: fold a job set's events into counts per state, print the
events that matter, and follow the set for as long as the user wants.

A watched job set may be silent for hours, so the following stream has no read timeout
(see :attr:`armada.client.calls.Call.follows`). A connection that drops (the server
restarts, a proxy hangs up) is reopened from the last message id received, so no event is
shown twice or missed; only ``--exit-if-inactive`` (every job finished) or Ctrl-C ends it.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from armada.client import ArmadaClient, StreamedEvent
from armada.client.errors import ArmadaClientError, ArmadaTransportError, ServerError
from armada.model import events as ev
from armada.model.lifecycle import JOB_STATE_AFTER, JobState
from armada.model.wire.base import MAX_IDS_PER_REQUEST
from armada.model.wire.events import encode_stream_line
from armada.model.wire.forecasts import span

#: Order in which the summary lists states.
SUMMARY_ORDER = [s for s in JobState if s is not JobState.UNKNOWN]
#: Without a terminal to redraw on, print the summary at most this often (seconds).
PLAIN_SUMMARY_INTERVAL = 1.0
#: Seconds between asks for the queued jobs' forecasts (the server refreshes them every 10 s).
FORECAST_INTERVAL = 10.0
#: Seconds before the first attempt to reopen a dropped stream, doubling up to the maximum.
RECONNECT_DELAY = 0.5
MAX_RECONNECT_DELAY = 5.0


class JobSetSummary:
    """Each job's state, folded from the job set's events (same rules as the views)."""

    def __init__(self) -> None:
        self.states: dict[str, JobState] = {}
        #: The earliest expected start of the queued jobs, as last asked (``None``: unknown).
        self.next_start: datetime | None = None

    def apply(self, event: ev.Event) -> None:
        if isinstance(event, ev.JobFailed) and event.retryable:
            return  # a retried run: the job goes on (``queued`` follows)
        state = JOB_STATE_AFTER.get(event.type)
        if state is not None and event.job_id:
            self.states[event.job_id] = state

    @property
    def finished(self) -> bool:
        """Every job of the set is finished (and there is at least one)."""
        return bool(self.states) and all(state.terminal for state in self.states.values())

    def queued(self) -> list[str]:
        return [job_id for job_id, state in self.states.items() if state is JobState.QUEUED]

    def line(self, now: datetime | None = None) -> str:
        counts = Counter(self.states.values())
        parts = [f"{state.value.lower()}: {counts[state]}" for state in SUMMARY_ORDER if counts[state]]
        line = f"{len(self.states)} job(s) | " + (", ".join(parts) or "no jobs yet")
        if self.next_start is not None and counts[JobState.QUEUED]:
            wait = (self.next_start - (now or datetime.now(UTC))).total_seconds()
            line += f" | next start {'in ~' + span(wait) if wait > 0 else 'due'}"
        return line


class Forecasts:
    """Asks now and then when the set's queued jobs are expected to start (``armada watch``'s
    "next start"); a server without forecasts, or one that fails to answer, shows none."""

    def __init__(
        self, client: ArmadaClient, summary: JobSetSummary, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.summary = summary
        self.clock = clock
        self._asked = -math.inf

    def update(self) -> None:
        if self.clock() - self._asked < FORECAST_INTERVAL:
            return
        self._asked = self.clock()
        queued = self.summary.queued()[:MAX_IDS_PER_REQUEST]
        if not queued:
            self.summary.next_start = None
            return
        try:
            found = self.client.job_forecast(queued)
        except ArmadaClientError:
            return
        starts = [f.expected_start for f in found.values() if f.expected_start is not None]
        self.summary.next_start = min(starts, default=None)


def _category(category: str, subcategory: str) -> str:
    """``, category user-error`` (with ``/subcategory``), or nothing for an uncategorised failure."""
    if not category:
        return ""
    return f", category {category}/{subcategory}" if subcategory else f", category {category}"


def notable(event: ev.Event) -> str | None:
    """A one-line description of events worth a line of their own."""
    match event:
        case ev.JobFailed():
            code = f", exit code {event.exit_code}" if event.exit_code is not None else ""
            retry = " (will retry)" if event.retryable else ""
            category = _category(event.failure_category, event.failure_subcategory)
            return f"job {event.job_id} failed ({event.cause.value}{code}{category}): {event.reason}{retry}"
        case ev.JobPreempted():
            return f"job {event.job_id} preempted: {event.reason or 'no reason given'}"
        case ev.JobCancelled() if event.reason:
            return f"job {event.job_id} cancelled: {event.reason}"
        case ev.JobLeaseReturned():
            return f"job {event.job_id} returned by {event.cluster_id or 'its cluster'}: {event.reason}"
        case ev.JobLeaseExpired():
            return f"job {event.job_id} lost its lease on {event.cluster_id or 'its cluster'}"
        case ev.JobIngressInfo() if event.ingress_addresses:
            ports = ", ".join(
                f"{port} → {address}" for port, address in sorted(event.ingress_addresses.items())
            )
            return f"job {event.job_id} exposes {ports}"
    return None


class Display:
    """Redraws the summary in place on a terminal; prints it now and then otherwise."""

    def __init__(self, summary: JobSetSummary) -> None:
        self.summary = summary
        self.live = sys.stdout.isatty()
        self._printed = ""
        self._last = 0.0

    def event_line(self, text: str) -> None:
        if self.live:
            sys.stdout.write("\r\x1b[K")
            self._printed = ""
        sys.stdout.write(text + "\n")

    def refresh(self, force: bool = False) -> None:
        line = self.summary.line()
        if line == self._printed:
            return
        if self.live:
            sys.stdout.write("\r\x1b[K" + line)
        elif force or time.monotonic() - self._last >= PLAIN_SUMMARY_INTERVAL:
            sys.stdout.write(line + "\n")
            self._last = time.monotonic()
        else:
            return
        self._printed = line
        sys.stdout.flush()

    def close(self) -> None:
        self.refresh(force=True)
        if self.live:
            sys.stdout.write("\n")
        sys.stdout.flush()


def follow(
    client: ArmadaClient,
    queue: str,
    job_set: str,
    after: str,
    handle: Callable[[StreamedEvent], bool],
    notice: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Pass the job set's events after message id ``after`` to ``handle`` as they happen,
    until it returns true; reopen the stream from the last id whenever it ends or drops.

    ``notice`` hears once per outage that the connection was lost. A server error (5xx, as
    while a server restarts) is an outage; any other refusal (the queue was deleted, the
    credentials were revoked) raises its :class:`~armada.client.ArmadaApiError`.
    """
    delay = RECONNECT_DELAY
    connected = True
    while True:
        try:
            for streamed in client.job_set_events(queue, job_set, watch=True, from_message_id=after):
                after, delay, connected = streamed.message_id, RECONNECT_DELAY, True
                if handle(streamed):
                    return
            why = "the server closed the stream"
        except ArmadaTransportError as exc:
            why = str(exc)
        except ServerError as exc:
            why = str(exc)
        if connected:
            notice(f"connection to {client.config.armada_url} lost ({why}); reconnecting")
            connected = False
        sleep(delay)
        delay = min(delay * 2, MAX_RECONNECT_DELAY)


def watch_job_set(client: ArmadaClient, queue: str, job_set: str, raw: bool, exit_if_inactive: bool) -> None:
    """Print the job set's history, then follow it (the ``armada watch`` command's work)."""
    summary = JobSetSummary()
    display = Display(summary)
    forecasts = Forecasts(client, summary)

    def show(streamed: StreamedEvent) -> None:
        summary.apply(streamed.event)
        if raw:
            sys.stdout.buffer.write(encode_stream_line(int(streamed.message_id), streamed.event))
            sys.stdout.flush()
            return
        description = notable(streamed.event)
        if description:
            display.event_line(description)

    def handle(streamed: StreamedEvent) -> bool:
        show(streamed)
        if not raw:
            forecasts.update()
            display.refresh()
        return exit_if_inactive and summary.finished

    def notice(text: str) -> None:
        if raw:  # standard output is NDJSON for a program to read
            sys.stderr.write(text + "\n")
        else:
            display.event_line(text)
        sys.stdout.flush()

    last = ""
    try:
        # Catch up first so that "inactive" is judged on the whole history, not part of it.
        for streamed in client.job_set_events(queue, job_set):
            show(streamed)
            last = streamed.message_id
        if not raw:
            forecasts.update()
            display.refresh(force=True)
        if exit_if_inactive and summary.finished:
            return
        follow(client, queue, job_set, last, handle, notice)
    finally:
        if not raw:
            display.close()
