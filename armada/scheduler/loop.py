"""The scheduler service: the leader's loop around the pure scheduling core.

Each cycle brings the in-memory state up to the log's head, expires silent executors and
requeues runs on lost nodes, asks the core for decisions, and appends them as events.
Decisions are built from the in-memory state the core decided on and, inside the append,
re-checked against the views for any job that changed since, so a job cancelled while
the core was thinking is never leased. New submissions wake the loop early.

Cycles overlap: cycle N+1 is computed while cycle N's decisions are being appended. N's
leases are held in the job db from the moment N decided (:mod:`.pending_leases`), so N+1
sees N's jobs as running on their nodes and neither leases them again nor uses their
capacity. At most one append of decisions is in flight: N+1 waits for N's before it builds
and appends its own, so N+1's re-check runs against views that include N's committed
decisions (a job N+1 decided on that N changed is rebuilt from the views; one N held but
did not lease is left out). When N's append fails, its held leases are released and N+1's
decisions, computed on top of them, are discarded; the jobs are scheduled again by the
next cycle. A cycle that preempts is not overlapped: the next one is computed from the
state with its preemptions applied, so fair share never counts a preempted job twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection, Sequence

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore import dialects, views
from armada.eventstore.store import Lane, Transaction
from armada.model import events as ev
from armada.model.lifecycle import FailureCause
from armada.scheduler.cluster_state import ClusterState
from armada.scheduler.decision_events import Decisions, decision_events, rows_in_state
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.history import CycleHistory
from armada.scheduler.leader import LeaderElection
from armada.scheduler.lost_runs import LostRun, end_lost_runs
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduler.shared_history import HistoryPublisher, shared_history
from armada.scheduler.store import SchedulerStore
from armada.scheduling import QueueShare, SchedulerState, SchedulingConfig, SchedulingResult, schedule
from armada.tracing import span

log = structlog.get_logger(__name__)
EXPIRY = FailureCause.LEASE_EXPIRED


class SchedulerService:
    def __init__(
        self,
        store: SchedulerStore,
        follower: EventLogFollower,
        leader: LeaderElection,
        settings: SchedulerServiceSettings,
        config: SchedulingConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.follower = follower
        self.leader = leader
        self.settings = settings
        self.config = config
        #: Cycles of the leader loop by outcome (upstream's ``schedule_outcome``).
        self.outcomes = {"success": 0, "failure": 0}
        self.clock = clock
        self.scheduler_state = SchedulerState()
        #: The last cycle's result, for scheduling reports.
        self.last_result: SchedulingResult | None = None
        #: When this replica's current unbroken run of cycles began (None: not leading).
        #: Executors cannot heartbeat into a log that nobody could write, so silence is
        #: only counted from here: a server or database outage expires no one's runs.
        self._watching_since: float | None = None
        #: The last few cycles, kept small, for reports and metrics.
        self.history = CycleHistory()
        #: Stores the history for the other replicas' reports (PostgreSQL: SQLite has one process).
        self._publisher: HistoryPublisher | None = None
        if dialects.is_postgres(store.engine):
            self._publisher = HistoryPublisher(store.engine, lambda: self.state.jobs)
            self.history.listeners.append(self._publisher.recorded)
        #: Whether this replica has said it is a standby since it last led.
        self._said_standby = False
        #: ``ClusterState.node_generation`` when runs were last checked for lost nodes.
        self._lost_nodes_checked = -1
        #: The log up to here has been considered by a cycle: the loop sleeps until news after it.
        self.considered_seq = 0
        self._task: asyncio.Task[None] | None = None
        #: The append of the last cycle's decisions, while it has not been waited for.
        self._in_flight: asyncio.Task[None] | None = None

    @property
    def state(self) -> ClusterState:
        return self.follower.state

    def shares(self) -> dict[str, dict[str, QueueShare]]:
        """Per pool and queue, the shares the last cycle computed (none before the first)."""
        return self.last_result.shares if self.last_result is not None else {}

    @property
    def executor_timeout(self) -> float:
        """Seconds of silence after which an executor's runs are expired."""
        return self.settings.executor_timeout

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):  # decisions already made are still written
            await self.decisions_written()
        if self._publisher is not None:
            await self._publisher.close()
        await self.leader.release()

    async def report_history(self) -> CycleHistory:
        """The history reports show: this replica's while it leads (or when it is the newer),
        else the leader's as stored."""
        if self.leader.is_leader or self._publisher is None:
            return self.history
        stored, own = await shared_history(self.store.engine, self.state.jobs), self.history.last
        newer = stored.last is not None and (own is None or stored.last.finished > own.finished)
        return stored if newer else self.history

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                if not await self.leader.ensure():
                    if not self._said_standby:
                        log.info(
                            "standby: another replica leads the scheduler; this one takes over if it stops"
                        )
                        self._said_standby = True
                    self._watching_since = None
                    await asyncio.sleep(self.settings.leader_retry_interval)
                    continue
                self._said_standby = False
                await self.start_cycle()
                self.outcomes["success"] += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed cycle (database down, ...) is retried
                self.outcomes["failure"] += 1
                log.exception("scheduling cycle failed", error=str(exc))
                self._watching_since = None
                await asyncio.sleep(1.0)
                continue
            await self.store.wait_for_change(self.considered_seq, timeout=self.settings.cycle_period)
            # Cycles start at least ``minCycleInterval`` apart; one that took longer than that
            # (a busy system) is followed at once, not after a further pause.
            await asyncio.sleep(max(0.0, started + self.settings.min_cycle_interval - time.monotonic()))

    async def cycle(self) -> SchedulingResult:
        """One scheduling cycle, its decisions written when it returns (callable directly in tests)."""
        result = await self.start_cycle()
        await self.decisions_written()
        return result

    async def start_cycle(self) -> SchedulingResult:
        """Decide one cycle and start appending its decisions, without waiting for them.

        Raises if the previous cycle's append failed (this cycle's decisions, computed on
        top of that one's, are then discarded).
        """
        started = time.monotonic()
        await self.follower.catch_up()
        synced = time.monotonic()
        now = self.clock()
        if self._watching_since is None:
            self._watching_since = now
        await self._expire_and_recover(now)
        decided_on = self.state.seq
        state_before = self.scheduler_state
        paused = {*self._lagging_executors(), *self.state.cordoned_executors}
        cpu_started = time.thread_time()  # the core runs on this thread without awaiting
        with span("armada.schedule", seq=decided_on):
            result = schedule(
                self.state.jobs,
                queues=self.state.queue_specs(),
                config=self.config,
                state=state_before,
                now=now,
                paused_executors=paused,
                max_leases=self._cycle_lease_cap(paused),
            )
        self.history.record(result, self.state.jobs)  # before any await lets decisions apply
        cpu_seconds = time.thread_time() - cpu_started
        decided = time.monotonic()
        await self.decisions_written()  # one append in flight; raises if the last one failed
        self.considered_seq = max(self.considered_seq, decided_on)
        self._start_append(result, state_before, started)
        self.scheduler_state = result.state
        self.last_result = result
        if result.preemptions:  # the next cycle decides on the state with them applied
            await self.decisions_written()
            await self.follower.catch_up()
        busy = result.stats.scheduled or result.stats.preempted or result.stats.rejected
        (log.info if busy else log.debug)(
            "scheduling cycle",
            seq=decided_on,
            queued=len(self.state.jobs),
            scheduled=result.stats.scheduled,
            preempted=result.stats.preempted,
            rejected=result.stats.rejected,
            seconds=round(result.stats.duration, 4),
            cpu_seconds=round(cpu_seconds, 4),
            sync_seconds=round(synced - started, 4),
            wait_seconds=round(time.monotonic() - decided, 4),
        )
        return result

    async def decisions_written(self) -> None:
        """Wait for the decisions in flight, if any, to be appended; raise if that failed."""
        task = self._in_flight
        if task is None:
            return
        try:
            await asyncio.shield(task)
        finally:
            if task.done() and self._in_flight is task:
                self._in_flight = None

    def _lagging_executors(self) -> list[str]:
        """Executors holding as many unacknowledged leases as allowed: back-pressure.

        Leasing faster than an executor takes runs would only pile up leases it cannot
        start (and lose the queues' fair order); its nodes rest until it catches up.
        """
        limit = self.settings.max_unacknowledged_leases_per_executor
        return [e.executor_id for e in self.state.executors.values() if len(e.unacknowledged) >= limit]

    def _cycle_lease_cap(self, paused: Collection[str]) -> int:
        """Most new leases for one cycle: ``max_unacknowledged_leases_per_executor`` per
        executor that takes leases now, ``max_leases_per_cycle`` in all, and no more than
        bring the runs leased and not yet started to ``max_leases_in_flight``.

        An executor takes a few thousand leases per call, so one cycle of a large backlog
        leasing everything that fits (100,000 jobs: one write holding the append lock for
        seconds) only queues leases on the server; a cycle's write stays bounded this way,
        and the overall cap keeps it bounded however many clusters take leases. The runs in
        flight bound the leases that the run reports have not caught up with.
        """
        takers = [e for e in self.state.executors.values() if e.nodes and e.executor_id not in paused]
        per_executor = self.settings.max_unacknowledged_leases_per_executor * len(takers)
        room = max(0, self.settings.max_leases_in_flight - self.state.leased_runs)
        return min(per_executor, self.settings.max_leases_per_cycle, room)

    # --- executors gone silent and nodes lost -------------------------------------------

    async def _expire_and_recover(self, now: float) -> None:
        watching_since = self._watching_since or now
        expired = [
            info
            for info in self.state.executors.values()
            if info.nodes and now - max(info.last_seen, watching_since) > self.settings.executor_timeout
        ]
        lost: list[LostRun] = []
        for info in expired:
            log.warning("executor timed out", executor=info.executor_id, runs=len(info.runs))
            lost += [LostRun(r, "lease expired", EXPIRY, True) for r in info.runs.values()]
        generation = self.state.node_generation
        for info in self.state.executors.values():
            if info in expired or generation == self._lost_nodes_checked:
                continue
            for run in info.runs.values():
                node = info.nodes.get(run.node)
                if node is None or not node.ready:
                    lost.append(LostRun(run, f"node {run.node} lost or not ready", FailureCause.ERROR, False))
        if not expired and not lost:
            self._lost_nodes_checked = generation
            return
        async with self.store.transaction() as tx:
            await self.end_lost_runs(tx, lost)
            for info in expired:  # its nodes leave the pool until it reports again
                tx.append([ev.ExecutorReported(executor_id=info.executor_id, pool=info.pool, nodes=[])])
        self._lost_nodes_checked = generation
        await self.follower.catch_up()

    async def end_lost_runs(self, tx: Transaction, lost: Sequence[LostRun]) -> None:
        """End ``lost`` runs in ``tx``: by the retry engine or ``maxRetries`` (see :mod:`.lost_runs`)."""
        await end_lost_runs(
            tx,
            self.state,
            lost,
            retry_settings=self.config.retry_policy,
            max_retries=self.settings.max_retries,
            unreadable=self.store.unreadable,
            avoid_node_labels=self.settings.avoid_node_labels_on_retry,
        )

    # --- decisions ----------------------------------------------------------------------

    def _start_append(self, result: SchedulingResult, state_before: SchedulerState, started: float) -> None:
        """Build the decisions' events, hold their leases and append them in a task.

        ``started``: when the cycle began (``time.monotonic()``); the log says how long after
        it the decisions were committed, and how long their append took.
        """
        job_ids = [
            *result.leases.job_ids,
            *(p.job_id for p in result.preemptions),
            *(r.job_id for r in result.rejections),
        ]
        if not job_ids:
            return
        # The core decided on the state as of its seq, which is what the views said then:
        # build from memory (before the leases are held there), and from the views only if
        # a decided job changed since.
        seen = self.state.seq
        retries = self.settings.max_retries
        draft = Decisions(
            decision_events(result, rows_in_state(self.state, job_ids), self.state, retries), job_ids
        )
        held = self.state.pending.hold(self.state.jobs, result.leases)

        async def decide(conn: AsyncConnection) -> Decisions:
            rows = await views.jobs_by_id(conn, job_ids)
            return Decisions(decision_events(result, rows, self.state, retries), job_ids)

        async def append() -> None:
            state = self.state
            appending = time.monotonic()
            try:
                appended, last = await self.store.append_checked(draft, seen, decide, lane=Lane.URGENT)
            except BaseException:
                state.pending.release(state.jobs, held)
                self.scheduler_state = state_before
                raise
            leased = {event.job_id for event in appended.events if type(event) is ev.JobLeased}
            state.pending.release(state.jobs, (job_id for job_id in held if job_id not in leased))
            if last - len(appended.events) == seen:
                # Nothing but the decisions was appended after the state they were decided
                # on; else what others appended meanwhile must wake the next cycle at once.
                self.considered_seq = max(self.considered_seq, last)
            committed = time.monotonic()
            log.info(
                "scheduling decisions written",
                events=len(appended.events),
                cycle_seconds=round(committed - started, 4),
                write_seconds=round(committed - appending, 4),
            )

        self._in_flight = asyncio.create_task(append(), name="scheduler-decisions")
