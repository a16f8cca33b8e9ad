"""The executor agent: lease loop, event reporter and run tracker around one backend."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

import armada
from armada.client.errors import AccessRefused, ArmadaClientError
from armada.client.executor_api import ExecutorApiClient
from armada.executor.admission import LeaseAdmission
from armada.executor.backend import ClusterBackend, RunStatus
from armada.executor.backoff import Backoff
from armada.executor.categories import Classifier
from armada.executor.log_lines import LogMissing
from armada.executor.node_pools import with_pools
from armada.executor.observer import TrackingObserver
from armada.executor.reporter import EventReporter
from armada.executor.settings import ExecutorSettings
from armada.executor.tracker import KillReason, RunTracker
from armada.model.leases import (
    EXECUTOR_PROTOCOL,
    MAX_WAIT_MILLIS,
    Lease,
    LeaseRequest,
    LeaseResponse,
    LogAnswer,
    LogOrder,
    NodeReport,
    RunEvent,
)
from armada.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

#: Longest a backend may take to read a log (the user waits ``scheduler.logWaitSeconds``).
LOG_READ_SECONDS = 8.0
#: What to check when the server refuses the executor's credential.
REFUSED_HINT = (
    "the token must be one of the server's auth.tokens, in a group holding execute_jobs, "
    "and list this cluster id under `executors` (docs/security.md, Executor identity)"
)


class ExecutorAgent:
    """Serves one cluster: pulls leases, starts and kills runs, reports their events."""

    def __init__(
        self,
        settings: ExecutorSettings,
        backend: ClusterBackend,
        client: ExecutorApiClient,
        admission: LeaseAdmission | None = None,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self._settings = settings
        #: Called once, when the cluster's state is first loaded (the first node report).
        self._on_synced = on_synced
        self._admission = admission or LeaseAdmission.from_settings(settings)
        self._backend = backend
        self._client = client
        self.reporter = EventReporter(
            client,
            settings.cluster_id,
            on_delivered=self._delivered,
            backoff=self._backoff,
            batch_size=settings.event_batch_size,
            max_buffered=settings.max_buffered_events,
            in_flight=settings.event_reports_in_flight,
        )
        self.tracker = RunTracker(Classifier(settings.error_categories))
        self.observer = TrackingObserver(
            self.tracker,
            put=self.reporter.put,
            offer=self.reporter.offer,
            clean_up=backend.release,
            kill=self._start_kill,
        )
        self._tasks: dict[str, asyncio.Task[None]] = {}
        #: Log reads under way (at most ``maxLogReads``), and "busy" answers being posted.
        self._log_reads: set[asyncio.Task[None]] = set()
        self._log_refusals: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        #: The node report the server last took; ``None`` until then or after a failed call.
        self._nodes_sent: list[NodeReport] | None = None
        #: The version of the server that answered the last lease call (logged when it changes).
        self._server_version: str | None = None
        self._log = log.bind(executor_id=settings.cluster_id, pool=settings.pool)

    def _backoff(self) -> Backoff:
        return Backoff(self._settings.retry_initial_seconds, self._settings.retry_max_seconds)

    def stop(self) -> None:
        """Ask ``run`` to return (after a graceful shutdown)."""
        self._stopping.set()

    async def run(self) -> None:
        """Adopt leftover runs, then lease and report until ``stop`` is called.

        Raises :class:`AccessRefused` (after the same graceful shutdown) when the server
        refuses this executor's credential: retrying would spin for ever on a setup mistake.
        """
        found = await self._backend.discover()
        self.tracker.adopt(found)
        if found:
            self._log.info("adopted runs from an earlier executor", runs=len(found))
        await self._backend.start(self.observer)
        reporter = asyncio.create_task(self.reporter.run(), name="event-reporter")
        leasing = asyncio.create_task(self._lease_loop(), name="lease-loop")
        stopping = asyncio.create_task(self._stopping.wait(), name="stop-signal")
        try:
            await asyncio.wait({reporter, leasing, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            crashed = [t for t in (reporter, leasing) if t.done() and not t.cancelled() and t.exception()]
            for task in (leasing, stopping):
                await cancel_and_wait(task)
            await self._shutdown(reporter)
        if crashed:
            if isinstance(refused := crashed[0].exception(), AccessRefused):
                raise refused
            raise RuntimeError(f"executor task {crashed[0].get_name()} failed") from crashed[0].exception()

    async def _shutdown(self, reporter: asyncio.Task[None]) -> None:
        if self._settings.kill_runs_on_shutdown:
            for run_id in self.tracker.reports():
                await self._kill(run_id, "shutdown")
        pending = list(self._tasks.values())
        if pending:
            await asyncio.wait(pending, timeout=self._settings.shutdown_flush_seconds)
        flushed = await self.reporter.flush(self._settings.shutdown_flush_seconds)
        if not flushed:
            self._log.warning("shutting down with undelivered events", backlog=self.reporter.backlog)
        for task in [reporter, *self._tasks.values()]:
            await cancel_and_wait(task)
        await self._backend.close()
        self._log.info("executor stopped")

    async def _lease_loop(self) -> None:
        backoff = self._backoff()
        while True:
            started = time.monotonic()
            try:
                nodes = with_pools(
                    await self._backend.nodes(),
                    default_pool=self._settings.pool,
                    label=self._settings.node_pool_label,
                    reserved_suffix=self._settings.reserved_node_pool_suffix,
                )
                if self._on_synced is not None:
                    self._on_synced()
                    self._on_synced = None
                request = self._lease_request(nodes, await self._backend.cordoned_nodes())
                response = await self._client.lease(request)
            except AccessRefused as exc:
                self._log.error(
                    "the server refuses this executor; stopping",
                    error=str(exc),
                    hint=REFUSED_HINT,
                )
                raise
            except Exception as exc:
                self._nodes_sent = None  # the server may not have taken them: send again
                self.tracker.held.unanswered()
                delay = backoff.next_delay()
                self._log.warning("lease call failed", error=repr(exc), retry_in=round(delay, 2))
                await asyncio.sleep(delay)
                continue
            backoff.reset()
            if response.server_version != self._server_version:
                self._server_version = response.server_version
                old = "0.9.0 or older"  # a server before protocol 2 names no version
                self._log.info("server version", version=response.server_version or old)
            self._nodes_sent = None if response.nodes_wanted else nodes
            self.tracker.held.answered(runs_wanted=response.runs_wanted)
            await self._apply(response, budget=request.max_new_leases)
            for order in response.log_requests:
                self._answer_log_later(order)
            await self._cordon(response.cordon_nodes, request.cordoned_nodes, nodes)
            if (response.nodes_wanted and request.nodes is None) or response.runs_wanted:
                continue  # the server lost our nodes or runs: send them at once
            busy = bool(response.leases or response.cancel_runs or response.preempt_runs)
            if response.log_requests and not busy:
                continue  # a call that only carried log reads: be back in the long poll at once
            settings = self._settings
            interval = settings.min_lease_interval_seconds if busy else settings.idle_lease_interval_seconds
            wait = interval - (time.monotonic() - started)
            if wait > 0:
                await asyncio.sleep(wait)

    def _lease_request(self, nodes: list[NodeReport], cordoned: list[str]) -> LeaseRequest:
        """The heartbeat; nodes only when they differ from those the server last took."""
        settings = self._settings
        room = settings.max_leased_runs - self.tracker.count("leased")
        runs = self.tracker.held.report()
        return LeaseRequest(
            executor_id=settings.cluster_id,
            pool=settings.pool,
            nodes=None if nodes == self._nodes_sent else nodes,
            runs=runs.runs,
            report_id=runs.report_id,
            runs_base=runs.runs_base,
            runs_gone=runs.runs_gone,
            runs_held=runs.runs_held,
            max_new_leases=0 if self.reporter.full else max(0, min(settings.max_new_leases, room)),
            wait_millis=min(int(settings.lease_wait_seconds * 1000), MAX_WAIT_MILLIS),
            cordoned_nodes=cordoned,
            executor_version=armada.__version__,
            protocol=EXECUTOR_PROTOCOL,
        )

    async def _apply(self, response: LeaseResponse, *, budget: int) -> None:
        """Kill, confirm adopted runs, then start at most ``budget`` new runs.

        Leases beyond what was asked for are not taken (nor reported), so the server sends
        them again later: the executor's memory stays bounded whatever the server does.
        """
        for run_id in response.cancel_runs:
            await self._kill(run_id, "cancel")
        for run_id in response.preempt_runs:
            await self._kill(run_id, "preempt")
        await self.observer.execute(self.tracker.confirm_all())
        for lease in response.leases:
            if self.tracker.holds(lease.run_id):
                continue
            if budget <= 0:
                self._log.debug("lease over budget; left for later", run_id=lease.run_id)
                continue
            budget -= 1
            self._launch(lease)

    def _answer_log_later(self, order: LogOrder) -> None:
        """Read and post the log in the background: a slow cluster never holds up leasing.

        At most ``maxLogReads`` reads at once: each holds a whole answer in memory, and a
        server (or user) asking faster than the cluster answers must not pile them up. A
        request past it is answered "busy" without reading (a cheap post)."""
        if len(self._log_reads) < self._settings.max_log_reads:
            self._in_background(self._log_reads, self._answer_log(order), order)
        else:
            refusal = self._post_log_answer(self._log_answer(order, busy=True))
            self._in_background(self._log_refusals, refusal, order)

    def _in_background(
        self, tasks: set[asyncio.Task[None]], work: Coroutine[Any, Any, None], order: LogOrder
    ) -> None:
        task = asyncio.create_task(work, name=f"log-{order.request_id}")
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def _log_answer(self, order: LogOrder, *, busy: bool = False) -> LogAnswer:
        return LogAnswer(executor_id=self._settings.cluster_id, request_id=order.request_id, busy=busy)

    async def _answer_log(self, order: LogOrder) -> None:
        answer = self._log_answer(order)
        try:
            async with asyncio.timeout(LOG_READ_SECONDS):
                answer.lines = await self._backend.read_log(order)
        except LogMissing as exc:
            answer.error, answer.missing = str(exc), True
        except Exception as exc:
            self._log.warning("log read failed", run_id=order.run_id, error=repr(exc))
            answer.error = str(exc) or type(exc).__name__
        await self._post_log_answer(answer)

    async def _post_log_answer(self, answer: LogAnswer) -> None:
        try:
            await self._client.answer_log(answer)
        except ArmadaClientError as exc:
            self._log.info("log answer not delivered", request_id=answer.request_id, error=str(exc))

    async def _cordon(self, wanted: dict[str, str], held: list[str], nodes: list[NodeReport]) -> None:
        """Cordon the nodes operators cordoned, uncordon those they no longer do.

        A failure is logged and retried by the next lease call, which reports what is held.
        """
        known = {node.name for node in nodes}
        changes: list[tuple[str, str | None]] = [(n, r) for n, r in wanted.items() if n not in held]
        changes += [(node, None) for node in held if node not in wanted]
        for node, reason in changes:
            if node not in known and reason is not None:
                continue  # not (or no longer) a node of this cluster
            try:
                await self._backend.cordon(node, reason)
                self._log.info("node cordoned" if reason is not None else "node uncordoned", node=node)
            except Exception as exc:
                self._log.warning("node cordon failed", node=node, error=repr(exc))

    def _launch(self, lease: Lease) -> None:
        if not self.tracker.accept(lease):
            return
        self._log.debug(
            "leased", run_id=lease.run_id, job_id=lease.job_id, queue=lease.queue, node=lease.node
        )
        self._spawn(lease.run_id, self._launch_or_return(lease))

    async def _kill(self, run_id: str, why: KillReason) -> None:
        await self.observer.execute(self.tracker.kill(run_id, why))

    def _start_kill(self, run_id: str, why: KillReason) -> None:
        """Kill the run's workload in the background (the tracker has marked it)."""
        self._log.info("killing run", run_id=run_id, why=why)
        launching = self._tasks.get(run_id)

        async def kill() -> None:
            if launching is not None:
                await cancel_and_wait(launching)
            backoff = self._backoff()
            while True:
                try:
                    await self._backend.kill(run_id)
                    return
                except Exception as exc:
                    delay = backoff.next_delay()
                    self._log.warning("kill failed; retrying", run_id=run_id, error=repr(exc), retry_in=delay)
                    await asyncio.sleep(delay)

        self._spawn(run_id, kill())

    def _spawn(self, run_id: str, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work, name=f"run-{run_id}")

        def done(finished: asyncio.Task[None]) -> None:
            if self._tasks.get(run_id) is finished:
                del self._tasks[run_id]
            if not finished.cancelled() and finished.exception() is not None:
                self._log.error("backend call failed", run_id=run_id, error=repr(finished.exception()))

        self._tasks[run_id] = task
        task.add_done_callback(done)

    async def _delivered(self, events: list[RunEvent]) -> None:
        await self.observer.execute(self.tracker.delivered(events))

    async def _launch_or_return(self, lease: Lease) -> None:
        """A launch the backend could not handle gives the lease back rather than hang.

        A lease this executor's rules refuse is failed (not returned: any executor with the
        same rules would refuse it again) and the backend never sees it.
        """
        refusal = self._admission.refusal(lease)
        if refusal is not None:
            self._log.warning("lease refused", run_id=lease.run_id, job_id=lease.job_id, reason=refusal)
            await self.observer.observe(RunStatus(run_id=lease.run_id, kind="failed", reason=refusal))
            return
        try:
            await self._backend.launch(lease)
        except Exception as exc:
            self._log.exception("launch failed", run_id=lease.run_id, job_id=lease.job_id)
            status = RunStatus(
                run_id=lease.run_id, kind="leaseReturned", reason=f"launch failed: {exc}", retryable=True
            )
            await self.observer.observe(status)
