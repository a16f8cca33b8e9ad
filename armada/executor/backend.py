"""The interface every cluster backend (kubernetes, process, fake) implements.

A backend turns leases into running workloads and reports what it observes as
``RunStatus`` values to a ``RunObserver`` (the run tracker). The tracker, not the
backend, decides what becomes an event: it drops repeats, stale phases, and anything
about a run being killed, so backends may report the same state as often as they like
(e.g. on every watch resync).
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from armada.model.leases import EventKind, FailureCause, Lease, LogOrder, NodeReport
from armada.model.lifecycle import RunPhase
from armada.model.wire.logs import LogLine


class BackendSetupError(Exception):
    """The backend cannot start as configured (a kubeconfig it cannot load): one sentence."""


class RunStatus(msgspec.Struct, kw_only=True):
    """One observation of a run in the cluster."""

    run_id: str
    kind: EventKind
    node: str = ""
    pod_name: str = ""
    exit_code: int | None = None
    reason: str = ""
    cause: FailureCause = ""
    log_tail: str = ""
    run_attempted: bool = False
    retryable: bool = False
    #: The failed container's termination message, when the backend has one.
    termination_message: str = ""
    #: For ``ingressInfo``: the pod's IP and where each exposed container port is reached.
    pod_ip: str = ""
    ingress_addresses: dict[int, str] = {}


class FoundRun(msgspec.Struct, kw_only=True):
    """A run a backend found in its cluster at start-up (left by a previous executor)."""

    run_id: str
    job_id: str
    phase: RunPhase


class RunObserver(Protocol):
    """Receives what a backend observes (the run tracker, through ``executor/observer``)."""

    async def observe(self, status: RunStatus) -> None:
        """Record a run's state; may wait while the event buffer is full (back-pressure)."""

    async def gone(self, run_id: str) -> None:
        """The run's pod or process no longer exists."""

    def holds(self, run_id: str) -> bool:
        """Whether the executor still holds the run (its result not yet delivered)."""


class ObserverSlot:
    """Where a backend reports: set by its ``start``; calling it returns the observer.

    A backend that reports before it was started has a bug, and says so.
    """

    def __init__(self) -> None:
        self._observer: RunObserver | None = None

    def attach(self, observer: RunObserver) -> None:
        self._observer = observer

    def __call__(self) -> RunObserver:
        if self._observer is None:
            raise RuntimeError("backend not started")
        return self._observer


class ClusterBackend(Protocol):
    """One cluster: its nodes and the runs placed on them."""

    async def discover(self) -> list[FoundRun]:
        """Runs left in the cluster by an earlier executor, before ``start``.

        The executor reports them in its next lease call; the server cancels the stale
        ones and the backend must never report them as succeeded before that answer.
        """

    async def start(self, observer: RunObserver) -> None:
        """Begin watching the cluster and reporting run states to ``observer``."""

    async def close(self) -> None:
        """Stop watching; runs keep going (a restarted executor adopts them)."""

    async def nodes(self) -> list[NodeReport]:
        """The cluster's nodes as last seen."""

    async def launch(self, lease: Lease) -> None:
        """Start the run; a run that already exists is left alone (retried leases)."""

    async def kill(self, run_id: str) -> None:
        """Stop the run and remove its workload; ends with ``observer.gone(run_id)``."""

    async def release(self, run_id: str, discard: bool = False) -> None:
        """The run's result was delivered: its leftovers may go after the retention period.

        ``discard``: the failure's category has ``action: Delete``, so they go at once.
        """

    async def read_log(self, order: LogOrder) -> list[LogLine]:
        """The run's log lines ``order`` selects, while it runs and after it ended, for as
        long as the cluster keeps them; raises ``LogMissing`` when it keeps none."""

    async def cordoned_nodes(self) -> list[str]:
        """The nodes this executor cordoned on the server's order (and has not uncordoned)."""

    async def cordon(self, node: str, reason: str | None) -> None:
        """Cordon ``node`` (nothing new starts there) with ``reason``; ``None``: uncordon it."""
