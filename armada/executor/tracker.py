"""The runs an executor holds, their phases, and which observations become events.

A run is held from its lease until its final event has been *delivered*, so the lease
call keeps reporting it through a server outage. Observations only move a run forward
(leased → pending → running → terminal); repeats are dropped. Once a run is being
killed (cancel, preempt, or stale) nothing more is reported for it: the server learns it
is gone when it disappears from the lease call's run list, and a killed run is never
reported as succeeded. Runs found in the cluster at start-up are *unconfirmed*: their
events wait until a lease response shows the server still wants them.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

import structlog

from armada.executor.backend import FoundRun, RunStatus
from armada.executor.categories import Classified, Classifier, ErrorCategoriesSettings, Failure
from armada.executor.held_runs import HeldRuns
from armada.model.leases import TERMINAL_KINDS, EventKind, Lease, RunEvent, RunPhase

#: Why a run is being killed: the server ordered a cancel or a preemption, or the executor stops.
KillReason = Literal["cancel", "preempt", "shutdown"]

log = structlog.get_logger(__name__)

_RANK: dict[str, int] = {"leased": 0, "pending": 1, "running": 2, "terminal": 3}


def _rank(kind: EventKind | RunPhase) -> int:
    return _RANK["terminal"] if kind in TERMINAL_KINDS else _RANK.get(kind, 0)


@dataclass
class HeldRun:
    """A run the executor is responsible for."""

    run_id: str
    job_id: str
    phase: RunPhase = "leased"
    confirmed: bool = True
    #: Set when a kill was ordered, to why.
    killing: KillReason | Literal[""] = ""
    #: Terminal state observed, or its workload confirmed gone after a kill.
    finished: bool = False
    #: Events handed to the reporter and not yet delivered.
    undelivered: int = 0
    #: Events of an unconfirmed run, released on confirmation.
    withheld: list[RunEvent] = field(default_factory=list)
    #: Its ``ingressInfo`` event was made (there is one per run).
    ingress_reported: bool = False
    #: Its failure's category says ``action: Delete``: the workload goes once the failure
    #: is delivered, not after the retention period (a retry reuses the pod's name).
    discard: bool = False


class RunTracker:
    """Implements ``RunObserver`` for the backends; feeds the lease call and the reporter."""

    def __init__(
        self,
        publish: Callable[[RunEvent], Awaitable[None]],
        on_released: Callable[[str, bool], Awaitable[None]],
        classifier: Classifier | None = None,
        *,
        offer: Callable[[RunEvent], bool] | None = None,
    ) -> None:
        self._publish = publish
        #: Hands an event over at once if that needs no waiting (False: it would wait), so
        #: that most events skip the task ``asyncio.shield`` makes around ``publish``.
        self._offer = offer
        self._classifier = classifier or Classifier(ErrorCategoriesSettings())
        self._on_released = on_released
        self._runs: dict[str, HeldRun] = {}
        #: Every held run's phase, kept as phases change, and what the lease call says of them.
        self.held = HeldRuns()
        #: Adopted runs not yet confirmed (after a restart only): each lease response looks at these.
        self._unconfirmed: dict[str, None] = {}

    def holds(self, run_id: str) -> bool:
        """Whether ``run_id`` is held."""
        return run_id in self._runs

    def get(self, run_id: str) -> HeldRun | None:
        """The held run ``run_id``, if any."""
        return self._runs.get(run_id)

    def __len__(self) -> int:
        return len(self._runs)

    def count(self, phase: RunPhase) -> int:
        """Held runs in ``phase``."""
        return operator.countOf(self.held.phases.values(), phase)

    def reports(self) -> dict[str, RunPhase]:
        """Every held run's phase by run id, for the lease call."""
        return self.held.phases.copy()

    def accept(self, lease: Lease) -> bool:
        """Hold a newly leased run; False if it is already held (a retried lease)."""
        if lease.run_id in self._runs:
            return False
        self._hold(HeldRun(run_id=lease.run_id, job_id=lease.job_id))
        return True

    def adopt(self, found: Iterable[FoundRun]) -> None:
        """Hold runs left by an earlier executor, unconfirmed until the next lease response."""
        for run in found:
            if run.run_id not in self._runs:
                self._hold(HeldRun(run_id=run.run_id, job_id=run.job_id, phase=run.phase, confirmed=False))

    def _hold(self, run: HeldRun) -> None:
        self._runs[run.run_id] = run
        self.held.hold(run.run_id, run.phase)
        if not run.confirmed:
            self._unconfirmed[run.run_id] = None

    def _set_phase(self, run: HeldRun, phase: RunPhase) -> None:
        run.phase = self.held.phases[run.run_id] = phase

    async def confirm_all(self) -> None:
        """After a lease response: unconfirmed runs the server did not cancel are wanted."""
        for run_id in list(self._unconfirmed):  # in the order they were adopted
            run = self._runs.get(run_id)
            if run is None or run.confirmed:
                del self._unconfirmed[run_id]
            elif not run.killing:
                del self._unconfirmed[run_id]
                run.confirmed = True
                withheld, run.withheld = run.withheld, []
                for event in withheld:
                    await self._publish(event)

    def start_kill(self, run_id: str, why: KillReason) -> bool:
        """Mark a run as being killed; False if it was not held or already being killed."""
        run = self._runs.get(run_id)
        if run is None or run.killing:
            return False
        run.killing = why
        self._set_phase(run, "terminating")
        run.undelivered -= len(run.withheld)
        run.withheld = []
        return True

    async def observe(self, status: RunStatus) -> None:
        """Turn a backend observation into an event if it moves the run forward."""
        run = self._runs.get(status.run_id)
        if run is None or run.killing or run.finished:
            return
        if status.kind == "ingressInfo":
            # Once, while running: the addresses of a pod not yet running may not exist.
            if run.ingress_reported or run.phase != "running":
                return
            run.ingress_reported = True
        elif _rank(status.kind) <= _rank(run.phase):
            return
        elif status.kind in TERMINAL_KINDS:
            run.finished = True
        else:
            self._set_phase(run, "pending" if status.kind == "pending" else "running")
        named = self._categorise(status)
        run.discard = named.action == "Delete"
        event = RunEvent(
            run_id=run.run_id,
            job_id=run.job_id,
            kind=status.kind,
            node=status.node,
            pod_name=status.pod_name,
            exit_code=status.exit_code,
            reason=status.reason,
            cause=status.cause,
            log_tail=status.log_tail,
            run_attempted=status.run_attempted,
            retryable=status.retryable,
            failure_category=named.category,
            failure_subcategory=named.subcategory,
            pod_ip=status.pod_ip,
            ingress_addresses=status.ingress_addresses,
        )
        log.debug("run event", run_id=run.run_id, job_id=run.job_id, kind=status.kind, reason=status.reason)
        run.undelivered += 1
        if run.confirmed:
            if self._offer is not None and self._offer(event):
                return
            # Shielded: the run is already marked finished, so a caller cancelled here (a
            # watch renewed, a shutdown) would otherwise lose its terminal event for ever.
            await asyncio.shield(self._publish(event))
        else:
            run.withheld.append(event)

    def _categorise(self, status: RunStatus) -> Classified:
        """The failure category of a failed run (nothing for other events)."""
        if status.kind != "failed":
            return Classified()
        failure = Failure(
            exit_code=status.exit_code,
            termination_message=status.termination_message or status.log_tail,
            cause=status.cause,
            message=status.reason,
            lost=status.retryable and status.exit_code is None,
        )
        return self._classifier.classify(failure)

    async def gone(self, run_id: str) -> None:
        """The run's workload vanished: finish a killed run, or return a lost one's lease."""
        run = self._runs.get(run_id)
        if run is None:
            return
        if not run.killing and not run.finished:
            await self.observe(
                RunStatus(
                    run_id=run_id,
                    kind="leaseReturned",
                    reason="run disappeared from the cluster",
                    run_attempted=run.phase == "running",
                    retryable=True,
                )
            )
        run.finished = True
        await self._release_if_done(run)

    async def delivered(self, events: list[RunEvent]) -> None:
        """The reporter delivered ``events``: release runs whose story is complete."""
        for event in events:
            run = self._runs.get(event.run_id)
            if run is not None:
                run.undelivered -= 1
                await self._release_if_done(run)

    async def _release_if_done(self, run: HeldRun) -> None:
        if run.finished and run.undelivered <= 0 and self._runs.get(run.run_id) is run:
            del self._runs[run.run_id]
            self.held.release(run.run_id)
            log.debug("run released", run_id=run.run_id, job_id=run.job_id)
            await self._on_released(run.run_id, run.discard)
