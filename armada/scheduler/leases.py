"""The executor lease protocol: heartbeats and node reports in; leases and kill orders out.

Any replica can answer: it reads the :class:`ClusterState` it follows from the log. A lease
call is idempotent — leases are the ``leased`` runs of this executor that it has not yet
reported holding, so a retried call sends the same leases again and never creates a run.
Runs the executor reports but the server no longer considers active are cancelled (stale);
runs the executor stopped reporting after holding them are gone: a requested cancel or
preemption is then confirmed, anything else is requeued.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence, Set
from datetime import UTC, datetime
from typing import Literal

import structlog

import armada
from armada.eventstore import views
from armada.eventstore.log_mailbox import LogMailbox, orders_topic
from armada.eventstore.store import Lane
from armada.model import events as ev
from armada.model.errors import InvalidRequest
from armada.model.leases import EXECUTOR_PROTOCOL, Lease, LeaseRequest, LeaseResponse, LogOrder, NodeReport
from armada.model.quantities import QuantityError, to_units
from armada.retries.attempts import run_ended_without_result
from armada.retries.avoidance import EndedRun, avoiding_jobs
from armada.scheduler.cluster_state import ClusterState, ExecutorInfo, RunInfo
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.held_runs import HeldRunReports
from armada.scheduler.lease_contents import lease_of, pod_for_pool, tolerations_on
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduler.store import SchedulerStore
from armada.tracing import span

log = structlog.get_logger(__name__)

#: What the executor is told to do with a run it holds.
KillOrder = Literal["cancel", "preempt"]


def executor_nodes(reports: Sequence[NodeReport]) -> list[ev.ExecutorNode]:
    """Reported nodes with quantities parsed; a bad quantity or a repeated name is a 400."""
    nodes = []
    names: set[str] = set()
    for index, report in enumerate(reports):
        if report.name in names:
            raise InvalidRequest(f"node {report.name!r} is reported twice", field=f"nodes[{index}].name")
        names.add(report.name)
        allocatable = _quantities(report.allocatable, f"nodes[{index}].allocatable")
        non_armada = _quantities(report.allocated_non_armada, f"nodes[{index}].allocatedNonArmada")
        nodes.append(
            ev.ExecutorNode(
                name=report.name,
                labels=report.labels,
                taints=report.taints,
                allocatable=allocatable,
                allocated_non_armada=non_armada,
                unschedulable=report.unschedulable,
                ready=report.ready,
                pool=report.pool,
            )
        )
    return nodes


def _quantities(resources: dict[str, str], where: str) -> dict[str, int]:
    """A node's resource list in units; a quantity that is not valid, finite and >= 0 is a 400."""
    units: dict[str, int] = {}
    for name, value in resources.items():
        try:
            amount = to_units(name, value)
        except QuantityError as exc:
            raise InvalidRequest(str(exc), field=f"{where}.{name}") from exc
        if amount < 0:
            raise InvalidRequest(f"negative quantity {value!r}", field=f"{where}.{name}")
        units[name] = amount
    return units


class LeaseService:
    def __init__(
        self,
        store: SchedulerStore,
        follower: EventLogFollower,
        settings: SchedulerServiceSettings,
        clock: Callable[[], float] = time.time,
        *,
        priority_class_name_override: str | None = None,
        pool_tolerations: dict[str, list[dict[str, str]]] | None = None,
        floating_resources: frozenset[str] = frozenset(),
        away_tolerations: dict[str, list[dict[str, str]]] | None = None,
        mailbox: LogMailbox | None = None,
    ) -> None:
        self.store = store
        #: Where log requests for executors wait (none: this server reads no logs).
        self.mailbox = mailbox
        self.follower = follower
        self.settings = settings
        self.clock = clock
        #: ``scheduling.priorityClassNameOverride``: the Kubernetes priority class of every pod.
        self.priority_class_name_override = priority_class_name_override
        #: Pool -> tolerations its pods get (``scheduling.pools[].jobDefaults.tolerations``).
        self.pool_tolerations = pool_tolerations or {}
        #: ``scheduling.floatingResources``: left out of pods (no node has them).
        self.floating_resources = floating_resources
        #: Priority class ("" = the default) -> tolerations of its ``awayNodeTypes``' taints: a
        #: pod of the class on a node with such a taint was placed there away, and tolerates it.
        self.away_tolerations = away_tolerations or {}
        self._heartbeat_recorded: dict[str, float] = {}
        self._held_reports = HeldRunReports()
        #: Each executor's version, as its last call said (logged when it changes).
        self._executor_versions: dict[str, str] = {}
        #: Each executor's log-request signal (:meth:`_order_signal`).
        self._orders: dict[str, asyncio.Event] = {}

    @property
    def state(self) -> ClusterState:
        return self.follower.state

    async def lease(self, request: LeaseRequest) -> LeaseResponse:
        """Answer one lease call, saying which version answers."""
        with span("armada.lease", executor=request.executor_id):
            if self._executor_versions.get(request.executor_id) != request.executor_version:
                self._executor_versions[request.executor_id] = request.executor_version
                log.info(
                    "executor version",
                    executor_id=request.executor_id,
                    version=request.executor_version or "0.9.0 or older",
                    protocol=request.protocol or 1,
                )
            response = await self._lease(request)
            response.server_version = armada.__version__
            response.protocol = EXECUTOR_PROTOCOL
            return response

    async def _lease(self, request: LeaseRequest) -> LeaseResponse:
        nodes = executor_nodes(request.nodes) if request.nodes is not None else None
        reported = self._held_reports.resolve(request)
        await self.follower.catch_up()
        if nodes is None and not self._knows_nodes(request):
            return LeaseResponse(nodes_wanted=True, runs_wanted=reported is None)
        await self._record_executor(request, nodes)
        if reported is None:
            return LeaseResponse(runs_wanted=True)
        return await self._long_poll(request, reported, self._order_signal(request.executor_id))

    def _order_signal(self, executor_id: str) -> asyncio.Event | None:
        """Set when a log request for ``executor_id`` may be waiting (none: no mailbox).

        The subscription outlives the call, so that a request posted between two calls is
        not missed; the mailbox is then read only when one was posted, rather than with a
        write on every lease call of every executor. A new subscription starts set: what was
        posted before it is looked for once.
        """
        if self.mailbox is None:
            return None
        orders = self._orders.get(executor_id)
        if orders is None:
            orders = self._orders[executor_id] = self.mailbox.signals.subscribe(orders_topic(executor_id))
            orders.set()
        return orders

    async def _long_poll(
        self, request: LeaseRequest, reported: Set[str], orders: asyncio.Event | None
    ) -> LeaseResponse:
        """Answer at once if there is news for this executor, else wait for some (bounded).

        News is a lease or kill order (from the log) or a log request (``orders`` is set
        when one is posted for this executor); other events (heartbeats, submissions the
        scheduler has not placed yet) wake the wait but do not end it.
        """
        response = await self._respond(request, reported)
        answered = self._news_marker(request.executor_id)
        response.log_requests = await self._log_orders(request.executor_id, orders)
        deadline = time.monotonic() + request.wait_millis / 1000
        # Long poll: wait for news for this executor; other events (heartbeats, submissions
        # the scheduler has not placed yet) wake us but do not end the wait.
        while not (
            response.leases or response.cancel_runs or response.preempt_runs or response.log_requests
        ) and set(response.cordon_nodes) == set(request.cordoned_nodes):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            seq = self.state.seq
            await self._wait_news(remaining, orders)
            posted = orders is not None and orders.is_set()
            moved = self.follower.applied.head > seq
            if not posted or moved:  # the log moved (or time is up)
                if not moved:
                    await self.follower.catch_up()  # time is up: one last look at the log
                # Else the follower has just applied what was new: reading the log again
                # would only find it at its head (a query per waiting call and batch). Most
                # news is other executors' or jobs' waiting to be placed: nothing to settle.
                if not moved or self._news_marker(request.executor_id) != answered:
                    response = await self._respond(request, reported)
                    answered = self._news_marker(request.executor_id)
            if posted:
                response.log_requests = await self._log_orders(request.executor_id, orders)
        return response

    def _news_marker(self, executor_id: str) -> tuple[int, int, int]:
        """What an answer to ``executor_id`` depends on in the state, as counters: while they
        stand, working the answer out again (set arithmetic over every run it holds) would
        give the same answer."""
        executor = self.state.executors.get(executor_id)
        if executor is None:
            return (0, -1, self.state.orders_changed)
        return (id(executor), executor.changes, self.state.orders_changed)

    async def _wait_news(self, timeout: float, orders: asyncio.Event | None) -> None:
        applied = self.follower.applied.wait(self.state.seq, timeout=timeout)
        if orders is None:
            await applied
            return
        waits = {asyncio.ensure_future(applied), asyncio.ensure_future(orders.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _log_orders(self, executor_id: str, orders: asyncio.Event | None) -> list[LogOrder]:
        """The log requests waiting for ``executor_id``, if one was signalled since the last look."""
        if self.mailbox is None or orders is None or not orders.is_set():
            return []
        orders.clear()  # before looking: a request posted while we look sets it again
        return await self.mailbox.take(executor_id, self.clock())

    def _knows_nodes(self, request: LeaseRequest) -> bool:
        """Whether nodes on record can stand for a call that leaves them out.

        Not for a new executor, a new pool, or one whose nodes were cleared when it went
        silent for too long (an executor that truly has none just sends ``[]`` again).
        """
        known = self.state.executors.get(request.executor_id)
        return known is not None and known.pool == request.pool and bool(known.nodes)

    async def _record_executor(self, request: LeaseRequest, nodes: list[ev.ExecutorNode] | None) -> None:
        """Append the executor's nodes when they change, and a heartbeat now and then."""
        now = self.clock()
        created = datetime.fromtimestamp(now, UTC)
        known = self.state.executors.get(request.executor_id)
        if nodes is not None and (
            known is None or known.pool != request.pool or list(known.nodes.values()) != nodes
        ):
            event: ev.Event = ev.ExecutorReported(
                executor_id=request.executor_id, pool=request.pool, nodes=nodes, created=created
            )
        elif (
            now - self._heartbeat_recorded.get(request.executor_id, 0.0)
            >= self.settings.heartbeat_record_interval
        ):
            event = ev.ExecutorHeartbeat(executor_id=request.executor_id, created=created)
        else:
            return
        # The executor waits on this call for its leases: its write overtakes bulk writers.
        await self.store.append([event], lane=Lane.PROMPT)
        self._heartbeat_recorded[request.executor_id] = now
        await self.follower.catch_up()

    async def _respond(self, request: LeaseRequest, reported: Set[str]) -> LeaseResponse:
        """Settle the executor's report (``reported``: the runs it holds) against the runs it
        should hold.

        Held runs number in the tens of thousands on a busy cluster and this runs on every
        call, so the bulk of the work is set arithmetic; loops touch only what changed.
        """
        executor = self.state.executors.get(request.executor_id)
        if executor is None:
            return LeaseResponse(cancel_runs=sorted(reported))  # nothing here is ours
        executor.acknowledge(executor.unacknowledged.keys() & reported)
        cancel_runs = list(reported - executor.runs.keys())  # stale: the server forgot them
        preempt_runs: list[str] = []
        kills = self._kill_orders(executor)
        for run_id, kind in kills.items():
            if run_id in reported:
                (cancel_runs if kind == "cancel" else preempt_runs).append(run_id)
        # Unreported runs are the fresh leases (still unacknowledged) plus any that are gone:
        # acknowledged once (pending, running, or reported) or ordered killed.
        ended = [
            executor.runs[run_id]
            for run_id in executor.runs.keys() - reported
            if run_id not in executor.unacknowledged or run_id in kills
        ]
        if ended:
            await self._end_runs(ended)
        # The executor says how many new runs it will take now (0: none, e.g. while its
        # event buffer is full); unsent leases stay leased and go out in a later call.
        limit = min(self.settings.max_unacknowledged_leases_per_executor, request.max_new_leases)
        ended_ids = {run.run_id for run in ended}
        to_send = (executor.runs[r] for r in executor.unacknowledged if r not in ended_ids)
        leases = await self._leases(executor, list(itertools.islice(to_send, limit)))
        return LeaseResponse(
            leases=leases,
            cancel_runs=sorted(cancel_runs),
            preempt_runs=sorted(preempt_runs),
            cordon_nodes=self._cordons(executor),
        )

    def _cordons(self, executor: ExecutorInfo) -> dict[str, str]:
        """The executor's nodes operators cordoned; a cordon of a node it no longer has
        waits (were it sent, the executor could never hold it, and no call would long-poll)."""
        cordoned = self.state.cordoned_nodes.get(executor.executor_id, {})
        return {node: reason for node, reason in cordoned.items() if node in executor.nodes}

    def _kill_orders(self, executor: ExecutorInfo) -> dict[str, KillOrder]:
        """This executor's runs whose jobs asked to be cancelled or preempted, by run id."""
        orders: dict[str, KillOrder] = {}
        for job_id in self.state.kill_requested:
            run = self.state.active_run(job_id)
            extras = self.state.extras.get(job_id)
            if run is not None and extras is not None and run.executor == executor.executor_id:
                orders[run.run_id] = "cancel" if extras.cancel_requested else "preempt"
        return orders

    async def _end_runs(self, runs: list[RunInfo]) -> None:
        """Runs no longer on the executor: confirm a requested kill, else requeue the job."""
        async with self.store.transaction() as tx:
            conn = await tx.views()
            rows = await views.jobs_by_id(conn, [run.job_id for run in runs])
            requests = await views.kill_requests(conn, [run.job_id for run in runs])
            ended = [EndedRun(run.job_id, run.executor, run.node) for run in runs]
            labels = self.settings.avoid_node_labels_on_retry
            fenced = await avoiding_jobs(conn, self.state, self.store.unreadable, ended, labels)
            for run in runs:
                row = rows.get(run.job_id)
                if row is None or row.latest_run_id != run.run_id or not row.state.active:
                    continue
                extras = self.state.extras.get(run.job_id)
                request = requests.get(run.job_id, views.KillRequest("", "", ""))
                envelope = row.envelope(run.run_id)
                if extras is not None and extras.cancel_requested:
                    tx.append(
                        [
                            ev.JobCancelled(
                                **envelope, reason=request.cancel_reason, requestor=request.cancel_user
                            )
                        ]
                    )
                elif extras is not None and extras.preempt_requested:
                    tx.append([ev.JobPreempted(**envelope, reason=request.preempt_reason)])
                else:
                    tx.append(
                        run_ended_without_result(
                            envelope,
                            cluster_id=run.executor,
                            attempts=extras.attempts if extras else 0,
                            max_retries=self.settings.max_retries,
                            reason="run disappeared from its executor",
                            job=fenced.get(run.job_id),
                        )
                    )
        await self.follower.catch_up()

    async def _leases(self, executor: ExecutorInfo, runs: list[RunInfo]) -> list[Lease]:
        if not runs:
            return []
        async with self.store.engine.connect() as conn:
            # An unreadable job is left out: Quarantine fails it, it is never leased.
            specs = await views.job_specs(conn, [run.job_id for run in runs], self.store.unreadable)
        leases = []
        for run in runs:
            if run.job_id in specs:
                node = executor.nodes.get(run.node)
                pool = (node.pool if node is not None else "") or executor.pool
                spec = specs[run.job_id]
                away = self.away_tolerations.get(spec.pod_spec.get("priorityClassName") or "", [])
                tolerations = tolerations_on(node, self.pool_tolerations.get(pool, []), away)
                job = pod_for_pool(spec, tolerations, self.floating_resources)
                leases.append(lease_of(run, job, node, self.priority_class_name_override))
        return leases
