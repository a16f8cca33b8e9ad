"""Event types: the only way state changes.

Every event is a msgspec Struct in one tagged union (tag field ``type``), serialised with
camelCase names. Events are kept forever, so they follow msgspec's schema-evolution rules:
never remove or retype a field, and give every new field a default.

The envelope (``queue``, ``jobSetId``, ``jobId``, ``runId``, ``created``) is common to all
events and is also stored in indexed columns of the ``events`` table.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypedDict

import msgspec

from armada.model.jobs import Job
from armada.model.lifecycle import RUN_STATE_AFTER, FailureCause
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy
from armada.model.taints import Taint


class Envelope(TypedDict, total=False):
    """The envelope fields, for building events of one job with ``**envelope``."""

    queue: str
    job_set_id: str
    job_id: str
    run_id: str


def utcnow() -> datetime:
    return datetime.now(UTC)


class Event(msgspec.Struct, tag_field="type", rename="camel", kw_only=True, omit_defaults=True):
    """Base of every event. Subclasses set ``tag`` to their upstream message name."""

    created: datetime = msgspec.field(default_factory=utcnow)
    queue: str = ""
    job_set_id: str = ""
    job_id: str = ""
    run_id: str = ""

    @property
    def type(self) -> str:
        # ``__struct_config__`` builds a new object on every access: look the tag up instead
        # (remembering those of subclasses defined elsewhere, such as a reader's lighter forms).
        kind = type(self)
        tag = _TAGS.get(kind)
        if tag is None:
            tag = _TAGS[kind] = str(kind.__struct_config__.tag)
        return tag


# --- job lifecycle (names as upstream's apiEventMessage) ------------------------------------


class JobSubmitted(Event, tag="submitted"):
    job: Job


class JobQueued(Event, tag="queued"):
    """The job waits for the scheduler: after submission and after every requeue."""

    attempts: int = 0
    #: Retries the retry engine has granted this job (genuine failures only).
    failure_retries: int = 0
    #: Set on a requeue the retry engine granted: the deciding policy (and the index of its
    #: rule, -1: ``defaultAction``) and the failure's category.
    retry_policy: str = ""
    retry_rule: int = -1
    failure_category: str = ""
    #: The job as it runs from now on, when the retry policy's ``mutate`` changed it (more
    #: memory, nodes to avoid); unset: unchanged.
    job: Job | None = None


class JobLeased(Event, tag="leased"):
    cluster_id: str
    node_id: str
    pool: str = "default"


class JobPending(Event, tag="pending"):
    cluster_id: str = ""
    node_name: str = ""
    pod_name: str = ""


class JobRunning(Event, tag="running"):
    cluster_id: str = ""
    node_name: str = ""
    pod_name: str = ""
    pool: str = ""


class JobIngressInfo(Event, tag="ingressInfo"):
    """Where a running job's exposed ports are reached: container port → ``host:port`` (a
    NodePort on the pod's node, a process's local port) or an Ingress hostname. Once per run."""

    cluster_id: str = ""
    node_name: str = ""
    pod_name: str = ""
    #: Ours, not upstream's: the pod's IP in the cluster network (empty when not known).
    pod_ip: str = ""
    ingress_addresses: dict[int, str] = {}


class JobSucceeded(Event, tag="succeeded"):
    cluster_id: str = ""
    node_name: str = ""
    pod_name: str = ""


class JobFailed(Event, tag="failed"):
    reason: str = ""
    cause: FailureCause = FailureCause.ERROR
    exit_code: int | None = None
    retryable: bool = False
    log_tail: str = ""
    cluster_id: str = ""
    node_name: str = ""
    pod_name: str = ""
    #: The executor's (or, for a lost lease, the server's) name for why the run failed.
    failure_category: str = ""
    failure_subcategory: str = ""
    #: The retry policy that refused a retry (empty when no policy decided), and the index of
    #: the rule that matched (-1: ``defaultAction``, or no policy).
    retry_policy: str = ""
    retry_rule: int = -1


class JobCancelling(Event, tag="cancelling"):
    reason: str = ""
    requestor: str = ""


class JobCancelled(Event, tag="cancelled"):
    reason: str = ""
    requestor: str = ""


class JobReprioritizing(Event, tag="reprioritizing"):
    new_priority: float
    requestor: str = ""


class JobReprioritized(Event, tag="reprioritized"):
    new_priority: float
    requestor: str = ""


class JobPreempting(Event, tag="preempting"):
    reason: str = ""
    requestor: str = ""


class JobPreempted(Event, tag="preempted"):
    preempting_job_id: str = ""
    reason: str = ""
    requestor: str = ""


class JobLeaseReturned(Event, tag="leaseReturned"):
    cluster_id: str = ""
    reason: str = ""
    run_attempted: bool = False
    #: Set when the run failed and the retry engine retries it: the failure's category and
    #: the policy (and rule index, -1 for ``defaultAction``) that decided.
    failure_category: str = ""
    failure_subcategory: str = ""
    retry_policy: str = ""
    retry_rule: int = -1
    #: The retried failure's exit code and node (for its ``failed`` form on the event stream).
    exit_code: int | None = None
    node_name: str = ""

    @property
    def retried_failure(self) -> bool:
        """The run failed and a retry policy retried the job (not a plain returned lease)."""
        return bool(self.retry_policy)


class JobLeaseExpired(Event, tag="leaseExpired"):
    cluster_id: str = ""


# --- queues ------------------------------------------------------------------------------


class QueueCreated(Event, tag="queueCreated"):
    spec: Queue
    requestor: str = ""


class QueueUpdated(Event, tag="queueUpdated"):
    """Replaces the whole queue definition (cordoning is an update too)."""

    spec: Queue
    requestor: str = ""


class QueueDeleted(Event, tag="queueDeleted"):
    requestor: str = ""


# --- retry policies (``queue`` in the envelope is empty; the name is in ``spec``/``name``) -----


class RetryPolicyCreated(Event, tag="retryPolicyCreated"):
    spec: RetryPolicy
    requestor: str = ""


class RetryPolicyUpdated(Event, tag="retryPolicyUpdated"):
    """Replaces the whole policy."""

    spec: RetryPolicy
    requestor: str = ""


class RetryPolicyDeleted(Event, tag="retryPolicyDeleted"):
    name: str
    requestor: str = ""


# --- Lookout's saved views (configuration a user keeps; the envelope's ids are empty) ------


class LookoutViewSaved(Event, tag="lookoutViewSaved"):
    """``user`` saved (or replaced) the jobs-page state ``state`` as ``name``."""

    user: str
    name: str
    state: dict[str, Any] = {}


class LookoutViewDeleted(Event, tag="lookoutViewDeleted"):
    user: str
    name: str


# --- executors and their nodes -----------------------------------------------------------


class ExecutorNode(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """A node as last reported by its executor; resources in integer units (see ``resources``)."""

    name: str
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    allocatable: dict[str, int] = {}
    allocated_non_armada: dict[str, int] = {}
    unschedulable: bool = False
    ready: bool = True
    #: The node's pool when it is not the executor's (the executor's ``nodePoolLabel``).
    pool: str = ""


class ExecutorReported(Event, tag="executorReported"):
    """An executor's node set changed (or it joined): replaces its nodes in the views."""

    executor_id: str
    pool: str = "default"
    nodes: list[ExecutorNode] = []


class ExecutorHeartbeat(Event, tag="executorHeartbeat"):
    """Periodic sign of life, recorded sparsely (not every lease call)."""

    executor_id: str


class ExecutorSettingsUpserted(Event, tag="executorSettingsUpserted"):
    """Upstream's executor settings: a cordoned executor gets no new leases (its runs go on)."""

    executor_id: str
    cordoned: bool = False
    cordon_reason: str = ""
    requestor: str = ""


class ExecutorSettingsDeleted(Event, tag="executorSettingsDeleted"):
    """The executor's settings are forgotten: it is no longer cordoned."""

    executor_id: str
    requestor: str = ""


class NodeCordonChanged(Event, tag="nodeCordonChanged"):
    """An operator cordoned (or uncordoned) one node of an executor; its executor carries
    the order out in the cluster, the scheduler stops placing there at once."""

    executor_id: str
    node: str
    cordoned: bool = True
    reason: str = ""
    requestor: str = ""


class ExecutorDeleted(Event, tag="executorDeleted"):
    """A vanished executor is forgotten with its nodes (its runs were ended before, as lost)."""

    executor_id: str
    requestor: str = ""


AnyEvent = (
    JobSubmitted
    | JobQueued
    | JobLeased
    | JobPending
    | JobRunning
    | JobIngressInfo
    | JobSucceeded
    | JobFailed
    | JobCancelling
    | JobCancelled
    | JobReprioritizing
    | JobReprioritized
    | JobPreempting
    | JobPreempted
    | JobLeaseReturned
    | JobLeaseExpired
    | QueueCreated
    | QueueUpdated
    | QueueDeleted
    | ExecutorReported
    | ExecutorHeartbeat
    | ExecutorSettingsUpserted
    | ExecutorSettingsDeleted
    | NodeCordonChanged
    | ExecutorDeleted
    | RetryPolicyCreated
    | RetryPolicyUpdated
    | RetryPolicyDeleted
    | LookoutViewSaved
    | LookoutViewDeleted
)


class UnreadableEvent(Event, tag="unreadable"):
    """Stands in, when the log is read, for a stored event that cannot be decoded.

    Never appended: readers get it in the decoded event's place (same seq and envelope, from
    the log's indexed columns), so that paging goes on and the record is skipped, not fatal.
    """

    #: The stored event's type, as recorded in the log.
    stored_type: str = ""
    error: str = ""


#: What reading the log yields: a decoded event, or the stand-in for one that is unreadable.
ReadEvent = AnyEvent | UnreadableEvent

_TAGS: dict[type[Event], str] = {
    cls: str(cls.__struct_config__.tag) for cls in (*AnyEvent.__args__, UnreadableEvent)
}

#: Every type this version appends: a stored event of another type comes from a newer version.
EVENT_TYPES = frozenset(str(cls.__struct_config__.tag) for cls in AnyEvent.__args__)

#: Upstream stream message names: the job events a job set's event stream carries.
JOB_EVENT_TYPES = frozenset(
    cls.__struct_config__.tag
    for cls in AnyEvent.__args__
    if issubclass(cls, Event) and cls.__name__.startswith("Job")
)

#: The events that end a run (a result, or none: returned, expired), from the lifecycle's table.
RUN_ENDS: tuple[type[Event], ...] = tuple(
    cls
    for cls in AnyEvent.__args__
    if (state := RUN_STATE_AFTER.get(str(cls.__struct_config__.tag))) is not None and not state.active
)

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(AnyEvent)


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


#: How a reader turns a stored payload into an event (:func:`decode_event` unless it needs less).
EventDecoder = Callable[[bytes], AnyEvent]


def decode_event(payload: bytes) -> AnyEvent:
    result: AnyEvent = _decoder.decode(payload)
    return result
