"""Wire contract between the server and its executors (``/v1/executor/*``).

One executor serves one cluster. It calls ``POST /v1/executor/lease`` as its heartbeat: it
reports the runs it still holds (all of them, or the change since a report the server
answered) and its nodes when they changed, and gets back new leases, the runs it must kill
and the nodes operators cordoned. Run state changes travel
separately, batched, on ``POST /v1/executor/events``, retried until delivered; the server
takes each event once because an event that would not move its run forward (a repeat, or
one for a run it has given up on) is dropped. Each carries an ``eventId``, the same across
retries, that names it in logs.
"""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec

from armada.model.ingress import IngressConfig, ServiceConfig
from armada.model.lifecycle import RunPhase
from armada.model.numbers import Count, ExitCode, Port
from armada.model.taints import Taint
from armada.model.wire.logs import LogLine

#: Kinds of run events. ``leaseReturned``: the executor gives the run back without a
#: result (could not start it, stuck pod); the server may lease the job again.
#: ``ingressInfo``: where the running job's exposed ports are reached (no change of phase).
EventKind = Literal["pending", "running", "ingressInfo", "succeeded", "failed", "leaseReturned"]
#: Why a run failed, when known.
FailureCause = Literal["", "Error", "OOM", "DeadlineExceeded", "Evicted"]
#: Executor, pool and node names: as long as the database columns that hold them.
Name = Annotated[str, msgspec.Meta(max_length=256)]
TERMINAL_KINDS: frozenset[EventKind] = frozenset({"succeeded", "failed", "leaseReturned"})
#: An exposed port's address: ``host:port`` or a hostname.
Address = Annotated[str, msgspec.Meta(max_length=512)]
#: Bytes of a failed run's output kept in ``RunEvent.log_tail``.
LOG_TAIL_BYTES = 4096
#: A lease call's name for its report of held runs.
ReportId = Annotated[str, msgspec.Meta(max_length=64)]
#: The protocol's version: 1 was 0.9.0's (whose calls name none), 2 adds the versions of
#: each side. A server answers executors of this protocol and the one before (executors are
#: upgraded after the servers); fields are only ever added, optional, so each side's older
#: peer keeps working (docs/development.md, "Compatibility").
EXECUTOR_PROTOCOL = 2


class _Wire(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    """JSON camelCase; defaults left out. Responses tolerate fields added later."""


class _Strict(_Wire, forbid_unknown_fields=True):
    """Executor-sent input: unknown fields are rejected."""


class NodeReport(_Strict, kw_only=True):
    """One node of the executor's cluster; quantities are Kubernetes quantity strings."""

    name: Name
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    allocatable: dict[str, str] = {}
    #: Requests of pods not started by Armada (daemon sets, system pods) on this node.
    allocated_non_armada: dict[str, str] = {}
    unschedulable: bool = False
    ready: bool = True
    #: The node's pool (from the executor's ``nodePoolLabel``); empty: the executor's ``pool``.
    pool: Name = ""


#: Longest long poll a lease call may ask for.
MAX_WAIT_MILLIS = 10_000


class LeaseRequest(_Strict, kw_only=True):
    """Heartbeat: the executor's runs (and nodes), and how many new runs it will take."""

    executor_id: Name
    pool: Name
    #: The cluster's nodes; left out when unchanged since the last report the server took
    #: (a 2,500-node report is ~300 KB: too much to send and parse every second).
    nodes: list[NodeReport] | None = None
    #: The runs the executor holds (its terminal event not yet delivered): run id → phase.
    #: All of them; or, with ``runsBase``, only those added since that report.
    runs: dict[str, RunPhase] = {}
    #: Names this call's report of held runs, so that a later call can send only the change
    #: since it (``runsBase``); chosen by the executor, unique per report.
    report_id: ReportId = ""
    #: The report (an earlier ``reportId`` the server answered) this one changes: ``runs``
    #: then holds the runs added since it and ``runsGone`` those no longer held. Empty: ``runs``
    #: is the whole list.
    runs_base: ReportId = ""
    #: With ``runsBase``: the runs of that report no longer held.
    runs_gone: list[str] = []
    #: With ``runsBase``: how many runs the executor holds in all, a check of the change (a
    #: server whose count differs asks for the whole list).
    runs_held: Count | None = None
    max_new_leases: Count = 0
    #: How long the server may hold the call when it has nothing new (long poll); at most
    #: ``MAX_WAIT_MILLIS`` so a call can never hold a connection (and a heartbeat) for long.
    wait_millis: Annotated[int, msgspec.Meta(ge=0, le=MAX_WAIT_MILLIS)] = 0
    #: The nodes this executor holds cordoned on the server's order (``cordonNodes``).
    cordoned_nodes: list[Name] = []
    #: The executor's armada version and protocol (left out by executors before protocol 2).
    executor_version: Annotated[str, msgspec.Meta(max_length=64)] = ""
    protocol: Annotated[int, msgspec.Meta(ge=0, le=EXECUTOR_PROTOCOL)] = 0


class Lease(_Wire, kw_only=True):
    """A run the server asks this executor to start on ``node``."""

    run_id: str
    job_id: str
    queue: str
    job_set_id: str
    owner: str = ""
    namespace: str = "default"
    node: str = ""
    #: The job's Kubernetes PodSpec, as JSON.
    pod_spec: dict[str, Any] = {}
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    priority_class_name: str = ""
    gang_id: str = ""
    gang_cardinality: int = 0
    #: For a gang placed on uniform nodes: the node label and the value its nodes share.
    gang_node_uniformity_label: str = ""
    gang_node_uniformity_value: str = ""
    #: Ports the job exposes: the executor creates them with the pod.
    services: list[ServiceConfig] = []
    ingress: list[IngressConfig] = []


class LogOrder(_Wire, kw_only=True):
    """A user waits for (part of) a run's log: read it and post it to ``/v1/executor/logs``.

    The selection has Kubernetes ``PodLogOptions`` meanings; the executor applies it in the
    order Kubernetes does (since, then tail, then the byte limit).
    """

    request_id: str
    run_id: str
    job_id: str
    namespace: str = "default"
    container: str = ""
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: datetime | None = None
    previous: bool = False
    limit_bytes: int | None = None
    #: Most bytes of encoded lines the answer may hold: the newest lines that fit are sent
    #: (the server's ``scheduler.maxLogBytes``; none: the executor's own cap).
    max_bytes: int | None = None


class LogAnswer(_Strict, kw_only=True):
    """The executor's answer to a :class:`LogOrder`: the lines, or why there are none."""

    executor_id: Name
    request_id: Annotated[str, msgspec.Meta(max_length=64)]
    lines: list[LogLine] = []
    #: Set when the log cannot be read; ``missing``: the cluster no longer keeps it.
    error: str = ""
    missing: bool = False
    #: The executor is already reading as many logs as it may (``executor.maxLogReads``):
    #: the user is told to try again shortly (429).
    busy: bool = False


class LeaseResponse(_Wire, kw_only=True):
    """New leases, and runs to kill (``cancelRuns`` also names stale runs the server forgot)."""

    leases: list[Lease] = []
    cancel_runs: list[str] = []
    preempt_runs: list[str] = []
    #: The server has no nodes on record for this executor (first contact, a new pool, or
    #: cleared after it went silent): the executor must include them in its next call. No
    #: leases come with this answer.
    nodes_wanted: bool = False
    #: The server does not hold the report the call's ``runsBase`` names (another replica
    #: answered it, or this one restarted): the executor must send every run it holds in its
    #: next call. No leases or kill orders come with this answer.
    runs_wanted: bool = False
    #: Logs users are waiting for, read from runs this executor holds or held.
    log_requests: list[LogOrder] = []
    #: Every node of this executor an operator cordoned, with the reason: the executor
    #: cordons these in its cluster and uncordons those it cordoned that are no longer here.
    cordon_nodes: dict[str, str] = {}
    #: The answering server's armada version and protocol (protocol 2 on).
    server_version: str = ""
    protocol: int = 0


#: This process's event ids: a random 64-bit prefix and a counter, 32 hex digits like a
#: UUID's, unique per process as a random UUID is and ~10x cheaper to make than ``uuid4()``
#: (a fake executor spent 6% of its CPU making them).
_event_id_prefix = os.urandom(8).hex()
_event_numbers = itertools.count()


def new_event_id() -> str:
    """A fresh, unique event id."""
    return f"{_event_id_prefix}{next(_event_numbers):016x}"


def _new_event_id_prefix() -> None:
    """A forked child numbers its own events: it must not repeat its parent's ids."""
    global _event_id_prefix, _event_numbers
    _event_id_prefix, _event_numbers = os.urandom(8).hex(), itertools.count()


os.register_at_fork(after_in_child=_new_event_id_prefix)


class RunEvent(_Strict, kw_only=True):
    """A change of a run's state, observed in the cluster."""

    #: Unique per event and stable across retries: it names the event in logs (the server
    #: drops a repeat by the run's state, not by this id).
    event_id: str = msgspec.field(default_factory=new_event_id)
    run_id: str
    job_id: str
    kind: EventKind
    time: datetime = msgspec.field(default_factory=lambda: datetime.now(UTC))
    node: str = ""
    pod_name: str = ""
    exit_code: ExitCode | None = None
    reason: str = ""
    cause: FailureCause = ""
    #: Last ``LOG_TAIL_BYTES`` of the run's output (failed runs).
    log_tail: str = ""
    #: For ``leaseReturned``: whether the container ever started.
    run_attempted: bool = False
    #: Whether the server may retry the job on another run.
    retryable: bool = False
    #: For ``failed``: the executor's failure category and subcategory (``errorCategories``).
    failure_category: Annotated[str, msgspec.Meta(max_length=63)] = ""
    failure_subcategory: Annotated[str, msgspec.Meta(max_length=63)] = ""
    #: For ``ingressInfo``: the pod's IP, and each exposed container port's address.
    pod_ip: Annotated[str, msgspec.Meta(max_length=64)] = ""
    ingress_addresses: Annotated[dict[Port, Address], msgspec.Meta(max_length=512)] = {}


class RunEventBatch(_Strict, kw_only=True):
    """Events sent together; the order within a batch is the order they happened per run."""

    executor_id: str
    events: list[RunEvent] = []


class EventsAccepted(_Wire, kw_only=True):
    """Response to a delivered event batch (empty; room to grow)."""


def tail_text(data: bytes, limit: int = LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of ``data`` as text, never splitting a UTF-8 sequence badly."""
    return data[-limit:].decode("utf-8", errors="replace")
