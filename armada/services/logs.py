"""Logs of a job's run, read by the executor that ran it (the server never calls a cluster).

The read is posted to the :class:`~armada.eventstore.log_mailbox.LogMailbox` for that
executor, rides its next lease long-poll (which the post wakes), and the executor's answer
wakes this request again, whichever replicas each step lands on. A wait is bounded by
``scheduler.logWaitSeconds``: an executor that stopped calling, or never answers, is a 503
naming it, never a hang.

Reads are bounded (:mod:`armada.services.log_quota`): so many per second per caller, so
many waiting per caller and per executor, so many lines and bytes per answer
(``scheduler.maxLogLines``/``maxLogBytes``, which also bound ``tailLines``/``limitBytes``),
and an answer is trimmed to them again here, whatever the executor sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from armada.eventstore import job_views
from armada.eventstore.log_mailbox import LogMailbox, answer_topic
from armada.eventstore.store import EventStore
from armada.model.errors import InvalidRequest, LimitExceeded, NotFound, Unavailable
from armada.model.leases import LogAnswer, LogOrder
from armada.model.wire.logs import LogOptions, LogRequest, LogResponse, newest_within
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.settings import SchedulerServiceSettings
from armada.services.log_quota import RETRY_AFTER, InFlight, Rate
from armada.services.visibility import ReadScope

#: Longest pause between two looks for an answer whose signal may have been lost
#: (a ``LISTEN`` connection that reconnected).
_RECHECK_SECONDS = 1.0


class LogService:
    def __init__(
        self,
        store: EventStore,
        mailbox: LogMailbox,
        follower: EventLogFollower,
        settings: SchedulerServiceSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.mailbox = mailbox
        self.follower = follower
        self.settings = settings
        self.clock = clock
        self.per_caller = InFlight(settings.max_log_reads_per_caller, "scheduler.maxLogReadsPerCaller")
        self.per_executor = InFlight(settings.max_log_reads_per_executor, "scheduler.maxLogReadsPerExecutor")
        self.rate = Rate(
            settings.log_reads_per_second_per_caller,
            settings.log_read_burst_per_caller,
            "scheduler.logReadsPerSecondPerCaller",
        )

    async def read(self, reads: ReadScope, request: LogRequest, caller: str) -> LogResponse:
        """The lines of the job's latest run (or ``runId``) the caller may watch; ``caller``
        names whose quota of waiting reads it counts against."""
        if not request.job_id:
            raise InvalidRequest("a job id is required", field="jobId")
        since = _since_time(request.since_time)
        options = request.log_options
        self._check_bounds(options)
        if request.pod_number != 0:
            raise NotFound(f"job {request.job_id} has one pod, number 0", field="podNumber")
        if not await reads.jobs([request.job_id]):
            raise NotFound(f"job {request.job_id} not found", field="jobId")
        run = await self._run(request)
        if request.pod_namespace and request.pod_namespace != run.namespace:
            raise NotFound(f"job {request.job_id} runs in namespace {run.namespace!r}", field="podNamespace")
        self._require_live(run.cluster)
        order = LogOrder(
            request_id=uuid.uuid4().hex,
            run_id=run.run_id,
            job_id=request.job_id,
            namespace=run.namespace,
            container=options.container,
            tail_lines=self.settings.max_log_lines if options.tail_lines is None else options.tail_lines,
            since_seconds=options.since_seconds,
            since_time=since,
            previous=options.previous,
            limit_bytes=options.limit_bytes,
            max_bytes=self.settings.max_log_bytes,
        )
        self.rate.take(caller, caller)
        with (
            self.per_caller.hold(caller, caller),
            self.per_executor.hold(run.cluster, f"executor {run.cluster}"),
        ):
            answer = await self._exchange(run.cluster, order)
        if answer.missing:
            raise NotFound(f"the log of run {run.run_id} is no longer kept: {answer.error}")
        if answer.busy:
            raise LimitExceeded(
                f"executor {run.cluster} is reading as many logs as it may (executor.maxLogReads); "
                f"try again in {RETRY_AFTER} s",
                retry_after=RETRY_AFTER,
            )
        if answer.error:
            raise Unavailable(f"executor {run.cluster} could not read the log: {answer.error}")
        lines = answer.lines[-self.settings.max_log_lines :]
        return LogResponse(log=newest_within(lines, self.settings.max_log_bytes))

    def _check_bounds(self, options: LogOptions) -> None:
        """``tailLines`` and ``limitBytes`` within what one answer may hold."""
        settings = self.settings
        if options.tail_lines is not None and options.tail_lines > settings.max_log_lines:
            raise InvalidRequest(
                f"at most {settings.max_log_lines} lines per read (scheduler.maxLogLines); "
                "follow with sinceTime for more",
                field="logOptions.tailLines",
            )
        if options.limit_bytes is not None and options.limit_bytes > settings.max_log_bytes:
            raise InvalidRequest(
                f"at most {settings.max_log_bytes} bytes per read (scheduler.maxLogBytes); "
                "follow with sinceTime for more",
                field="logOptions.limitBytes",
            )

    async def _run(self, request: LogRequest) -> _Run:
        async with self.store.engine.connect() as conn:
            runs = await job_views.runs_of_jobs(conn, [request.job_id])
            jobs = await job_views.job_detail_rows(conn, [request.job_id], with_spec=False)
        if request.run_id:
            runs = [row for row in runs if row.run_id == request.run_id]
            if not runs:
                raise NotFound(f"job {request.job_id} has no run {request.run_id}", field="runId")
        if not runs:
            raise NotFound(f"job {request.job_id} has not run yet: it has no log", field="jobId")
        row = runs[-1]
        namespace = jobs[0].namespace if jobs else "default"
        return _Run(row.run_id, row.cluster, namespace)

    def _require_live(self, executor_id: str) -> None:
        """A 503 at once for an executor that stopped calling: nobody would take the request."""
        known = self.follower.state.executors.get(executor_id)
        silent = self.clock() - known.last_seen if known is not None else None
        if silent is None or silent > self.settings.executor_timeout:
            since = f"for {silent:.0f} s" if silent is not None else "any more"
            raise Unavailable(
                f"executor {executor_id}, which ran the job, has not been heard from {since}: "
                "its logs cannot be read until it is back"
            )

    async def _exchange(self, executor_id: str, order: LogOrder) -> LogAnswer:
        """Post ``order`` and wait (bounded) for the executor's answer."""
        topic = answer_topic(order.request_id)
        signals = self.mailbox.signals
        deadline = time.monotonic() + self.settings.log_wait_seconds
        answer: LogAnswer | None = None
        arrived = signals.subscribe(topic)  # before posting: no answer can be missed
        try:
            await self.mailbox.post(executor_id, order, self.clock())
            while (remaining := deadline - time.monotonic()) > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(remaining, _RECHECK_SECONDS)):
                        await arrived.wait()
                arrived.clear()
                answer = await self.mailbox.collect(order.request_id)
                if answer is not None:
                    return answer
        finally:
            signals.unsubscribe(topic, arrived)
            if answer is None:
                await asyncio.shield(self.mailbox.withdraw(order.request_id))
        raise Unavailable(
            f"executor {executor_id} did not answer within {self.settings.log_wait_seconds:g} s; "
            "try again later"
        )


class _Run(NamedTuple):
    run_id: str
    cluster: str
    namespace: str


def _since_time(text: str) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(f"not an RFC 3339 time: {text!r}", field="sinceTime") from None
    if moment.tzinfo is None:
        raise InvalidRequest(f"the time must name its offset (e.g. Z): {text!r}", field="sinceTime")
    return moment
