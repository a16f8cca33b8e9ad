"""The runs an executor holds, their phases, and which observations become events.

A pure state machine, after dask's ``worker_state_machine``: each call changes the held
runs at once and returns the :data:`Instruction` list that follows (report an event, kill
a run, clean up a run's workload); the caller carries them out (``executor/observer``).
Nothing here awaits, so no transition is ever left half done.

A run is held from its lease until its final event has been *delivered*, so the lease
call keeps reporting it through a server outage. Observations only move a run forward, as
:data:`~armada.model.lifecycle.RUN_MOVES` allows; repeats are dropped. Once a run is being
killed (cancel, preempt, or stale) nothing more is reported for it: the server learns it
is gone when it disappears from the lease call's run list, and a killed run is never
reported as succeeded. Runs found in the cluster at start-up are *unconfirmed*: their
events wait until a lease response shows the server still wants them.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import structlog

from armada.executor.backend import FoundRun, RunStatus
from armada.executor.categories import Classified, Classifier, ErrorCategoriesSettings, Failure
from armada.executor.runs_report import HeldRuns
from armada.model.leases import Lease, RunEvent
from armada.model.lifecycle import PHASE_STATE, RUN_STATE_AFTER, RunPhase, RunState, run_moves

#: Why a run is being killed: the server ordered a cancel or a preemption, or the executor stops.
KillReason = Literal["cancel", "preempt", "shutdown"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Report:
    """Hand ``event`` to the reporter for delivery."""

    event: RunEvent


@dataclass(frozen=True, slots=True)
class Kill:
    """Kill the run's workload (it is already marked as being killed)."""

    run_id: str
    why: KillReason


@dataclass(frozen=True, slots=True)
class CleanUp:
    """The run is released: remove its workload (``discard``: now, not after retention)."""

    run_id: str
    discard: bool


#: What the caller must do after a transition, in order.
Instruction = Report | Kill | CleanUp


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
    """The held runs' state machine; feeds the lease call, and says what to report and kill."""

    def __init__(self, classifier: Classifier | None = None) -> None:
        self._classifier = classifier or Classifier(ErrorCategoriesSettings())
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

    def confirm_all(self) -> list[Instruction]:
        """After a lease response: unconfirmed runs the server did not cancel are wanted."""
        instructions: list[Instruction] = []
        for run_id in list(self._unconfirmed):  # in the order they were adopted
            run = self._runs.get(run_id)
            if run is None or run.confirmed:
                del self._unconfirmed[run_id]
            elif not run.killing:
                del self._unconfirmed[run_id]
                run.confirmed = True
                withheld, run.withheld = run.withheld, []
                instructions += [Report(event) for event in withheld]
        return instructions

    def kill(self, run_id: str, why: KillReason) -> list[Instruction]:
        """Mark a run as being killed; nothing to do if it is not held or already being killed."""
        run = self._runs.get(run_id)
        if run is None or run.killing:
            return []
        run.killing = why
        self._set_phase(run, "terminating")
        run.undelivered -= len(run.withheld)
        run.withheld = []
        return [Kill(run_id, why)]

    def observe(self, status: RunStatus) -> list[Instruction]:
        """Turn a backend observation into an event to report if it moves the run forward."""
        run = self._runs.get(status.run_id)
        if run is None or run.killing or run.finished:
            return []
        if status.kind == "ingressInfo":
            # Once, while running: the addresses of a pod not yet running may not exist.
            if run.ingress_reported or run.phase != "running":
                return []
            run.ingress_reported = True
        else:
            to = RUN_STATE_AFTER[status.kind]
            # An adopted run found terminating (not killed by this executor) moves as a leased one.
            if not run_moves(PHASE_STATE.get(run.phase, RunState.LEASED), to):
                return []
            if to.active:
                self._set_phase(run, "pending" if status.kind == "pending" else "running")
            else:
                run.finished = True
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
            return [Report(event)]
        run.withheld.append(event)
        return []

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

    def gone(self, run_id: str) -> list[Instruction]:
        """The run's workload vanished: finish a killed run, or return a lost one's lease."""
        run = self._runs.get(run_id)
        if run is None:
            return []
        instructions: list[Instruction] = []
        if not run.killing and not run.finished:
            instructions += self.observe(
                RunStatus(
                    run_id=run_id,
                    kind="leaseReturned",
                    reason="run disappeared from the cluster",
                    run_attempted=run.phase == "running",
                    retryable=True,
                )
            )
        run.finished = True
        return instructions + self._release_if_done(run)

    def delivered(self, events: Iterable[RunEvent]) -> list[Instruction]:
        """The reporter delivered ``events``: release runs whose story is complete."""
        instructions: list[Instruction] = []
        for event in events:
            run = self._runs.get(event.run_id)
            if run is not None:
                run.undelivered -= 1
                instructions += self._release_if_done(run)
        return instructions

    def _release_if_done(self, run: HeldRun) -> list[Instruction]:
        if not (run.finished and run.undelivered <= 0 and self._runs.get(run.run_id) is run):
            return []
        del self._runs[run.run_id]
        self.held.release(run.run_id)
        log.debug("run released", run_id=run.run_id, job_id=run.job_id)
        return [CleanUp(run.run_id, run.discard)]
