"""Bodies of Lookout's JSON API (``/api/v1/...``): job filters, pages, groups, overview.

These are the UI's own types, not upstream's: the browser is the only client, so they carry
exactly what the pages show, in camelCase like the rest of the API, and always every field
(the app need not guess defaults).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from armada.model.wire.base import Request
from armada.model.wire.retry_history import RetryHistory


class Response(msgspec.Struct, rename="camel", kw_only=True):
    """A response body with every field present (unlike the upstream API's, which omit defaults)."""


SortField = Literal["submitted", "lastTransition", "priority"]
GroupField = Literal["queue", "jobSet", "state"]
JobStateName = Literal[
    "QUEUED", "LEASED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"
]
#: Largest page the UI may ask for; pages are for people, bulk reads go through the job API.
MAX_TAKE = 500
#: Deepest page offset: an offset is a scan of every row before it, so deep pages cost the
#: database more the deeper they go; past this, narrow the filter (job set, state, time)
#: or sort the other way instead.
MAX_SKIP = 10_000
#: Most annotations one filter may match on: each is a condition of the query, and the
#: databases refuse (SQLite: an expression tree deeper than 1,000) or crawl long before
#: thousands; a person filtering a page names a few.
MAX_ANNOTATION_FILTERS = 16
#: Longest text a filter field may hold: job set ids, the longest names stored, are at most
#: 1,023 characters (annotation values may be longer, but a filter is typed by a person).
MAX_FILTER_TEXT = 1023
FilterText = Annotated[str, Meta(max_length=MAX_FILTER_TEXT)]


#: Columns a :class:`ColumnMatch` may test, by kind: text, number, time.
TextColumn = Literal["queue", "jobSet", "owner", "namespace", "priorityClass", "cluster", "node", "reason"]
NumberColumn = Literal["priority", "cpuMillis", "memoryBytes", "gpu", "exitCode"]
TimeColumn = Literal["submitted", "lastTransition"]
MatchType = Literal["exact", "startsWith", "contains", "anyOf", "exists", "greaterThan", "lessThan"]
#: Most column matches one filter may hold, and most values one ``anyOf`` may list.
MAX_MATCHES = 16
MAX_ANY_OF = 100


class ColumnMatch(Request):
    """One column against a value, as upstream Lookout's filters: text columns take
    ``exact``, ``startsWith``, ``contains`` (both ignore ASCII case), ``anyOf`` and
    ``exists`` (set and not empty); number and time columns ``exact``, ``anyOf`` (numbers),
    ``greaterThan`` and ``lessThan`` (``value``: a number, or an RFC 3339 time)."""

    column: TextColumn | NumberColumn | TimeColumn
    match: MatchType = "exact"
    value: FilterText = ""
    values: Annotated[list[FilterText], Meta(max_length=MAX_ANY_OF)] = []


#: Columns jobs can be grouped by (nested grouping); ``annotation`` with a key.
GroupColumn = Literal[
    "queue", "jobSet", "state", "owner", "namespace", "priorityClass", "cluster", "node", "pool", "annotation"
]
#: Deepest nesting of groups: each level is one more condition on every query inside it.
MAX_GROUP_LEVELS = 4


class GroupKey(Request):
    """What to group by: a column, or an annotation's value (``column: annotation``)."""

    column: GroupColumn
    #: The annotation key, for ``column: annotation`` only.
    annotation: FilterText = ""


class GroupValue(GroupKey):
    """One group that jobs lie in: the column's value, ``""`` for jobs without one."""

    value: FilterText = ""


class JobFilter(Request):
    """Every field narrows the result; empty fields do not filter."""

    queue: FilterText = ""
    job_set: FilterText = ""
    states: list[JobStateName] = []
    #: Job ids are ULIDs: a prefix selects jobs submitted in the same stretch of time.
    job_id: FilterText = ""
    owner: FilterText = ""
    #: Annotation key -> exact value.
    annotations: Annotated[dict[FilterText, FilterText], Meta(max_length=MAX_ANNOTATION_FILTERS)] = {}
    submitted_from: datetime | None = None
    submitted_to: datetime | None = None
    #: Further conditions on single columns, all of which must hold.
    matches: Annotated[list[ColumnMatch], Meta(max_length=MAX_MATCHES)] = []
    #: The expanded groups the jobs lie in, outermost first (nested grouping).
    within: Annotated[list[GroupValue], Meta(max_length=MAX_GROUP_LEVELS)] = []


class Order(Request):
    field: SortField = "submitted"
    direction: Literal["asc", "desc"] = "desc"


class JobsRequest(Request):
    filter: JobFilter = msgspec.field(default_factory=JobFilter)
    order: Order = msgspec.field(default_factory=Order)
    skip: Annotated[int, Meta(ge=0, le=MAX_SKIP)] = 0  # tighter than Count: see MAX_SKIP
    take: Annotated[int, Meta(ge=1, le=MAX_TAKE)] = 100


class JobRow(Response):
    job_id: str
    queue: str
    job_set: str
    owner: str
    namespace: str
    priority: float
    priority_class: str
    state: str
    submitted: datetime
    last_transition: datetime
    cpu_millis: int
    memory_bytes: int
    gpu: int
    annotations: dict[str, str] = {}
    cluster: str = ""
    node: str = ""
    exit_code: int | None = None
    reason: str = ""
    run_started: datetime | None = None
    run_finished: datetime | None = None
    cancel_requested: bool = False
    #: Queued jobs: when the last forecast expects it to start (docs/forecast.md).
    expected_start: datetime | None = None


class JobsResponse(Response):
    jobs: list[JobRow] = []
    #: More jobs match after this page.
    has_more: bool = False


class CountRequest(Request):
    filter: JobFilter = msgspec.field(default_factory=JobFilter)


class CountResponse(Response):
    #: Jobs matching the filter, counted up to a limit (``capped`` when it stopped there).
    count: int
    capped: bool


class GroupsRequest(Request):
    filter: JobFilter = msgspec.field(default_factory=JobFilter)
    group_by: GroupField = "queue"
    take: Annotated[int, Meta(ge=1, le=MAX_TAKE)] = 100


class JobGroup(Response):
    #: The queue, job set or state this group stands for.
    name: str
    #: For job-set groups, the queue the set belongs to.
    queue: str = ""
    count: int = 0
    states: dict[str, int] = {}
    #: Newest job of a job-set group (ULIDs order by submission); empty for other groups.
    latest_job_id: str = ""


class GroupsResponse(Response):
    groups: list[JobGroup] = []


class GroupOrder(Request):
    field: Literal["count", "value", "cpuMillis", "memoryBytes", "gpu"] = "count"
    direction: Literal["asc", "desc"] = "desc"


class GroupJobsRequest(Request):
    """One level of nested grouping: the groups of ``groupBy`` among the jobs matching the
    filter, whose ``within`` names the expanded groups above this level."""

    group_by: GroupKey
    filter: JobFilter = msgspec.field(default_factory=JobFilter)
    order: GroupOrder = msgspec.field(default_factory=GroupOrder)
    skip: Annotated[int, Meta(ge=0, le=MAX_SKIP)] = 0
    take: Annotated[int, Meta(ge=1, le=MAX_TAKE)] = 100


class GroupAggregate(Response):
    """One group: its value (``""``: jobs without one), how many jobs, what they request."""

    value: str
    count: int
    cpu_millis: int
    memory_bytes: int
    gpu: int


class GroupJobsResponse(Response):
    groups: list[GroupAggregate] = []
    #: More groups follow this page.
    has_more: bool = False


class RunView(Response):
    run_id: str
    state: str
    cluster: str
    node: str
    pool: str
    leased: datetime
    pending: datetime | None = None
    started: datetime | None = None
    finished: datetime | None = None
    exit_code: int | None = None
    reason: str = ""
    #: Where the run's exposed ports are reached (its ``ingressInfo`` event), by port.
    ingress_addresses: dict[int, str] = {}


class TimelineEvent(Response):
    """One event of the job, as on the job-set event stream: message id, type, fields."""

    id: str
    type: str
    created: datetime
    fields: dict[str, Any] = {}


class JobCommand(Response):
    """A configured command filled in for one job (``lookout.commands``)."""

    name: str
    description: str
    command: str


class JobLink(Response):
    """A configured link filled in for one job (``lookout.links``)."""

    name: str
    href: str


class JobDetail(Response):
    job: JobRow
    spec_yaml: str
    runs: list[RunView] = []
    events: list[TimelineEvent] = []
    cancel_reason: str = ""
    cancel_user: str = ""
    attempts: int = 0
    gang_id: str = ""
    #: The end of the failed container's output, from the last ``failed`` event.
    log_tail: str = ""
    #: Every attempt and what decided the next (the drawer's "Retries" section).
    retries: RetryHistory = msgspec.field(default_factory=RetryHistory)
    #: The configured commands and links, filled in (those needing a run only once it has one).
    commands: list[JobCommand] = []
    links: list[JobLink] = []


class Resources(Response):
    """Integer units: cpu in millicores, memory in bytes, gpus whole."""

    cpu_millis: int = 0
    memory_bytes: int = 0
    gpu: int = 0


class Share(Response):
    """A queue's dominant shares in one pool after the last scheduling cycle (0..1)."""

    fair_share: float
    adjusted_fair_share: float
    actual_share: float
    demand: float


class QueueSummary(Response):
    name: str
    priority_factor: float
    cordoned: bool
    #: Unfinished jobs by state (QUEUED, LEASED, PENDING, RUNNING).
    counts: dict[str, int] = {}
    #: Pool -> share, empty until this replica has run a scheduling cycle.
    shares: dict[str, Share] = {}


class ExecutorOverview(Response):
    """One executor's line in the Lookout overview: its nodes, capacity and use."""

    executor_id: str
    pool: str
    last_seen: datetime
    #: Silent for longer than the scheduler's executor timeout.
    stale: bool
    nodes: int
    ready_nodes: int
    capacity: Resources
    used: Resources
    #: Cordoned by an operator (no new leases), and why.
    cordoned: bool = False
    cordon_reason: str = ""


class PoolSummary(Response):
    name: str
    executors: int
    nodes: int
    capacity: Resources
    used: Resources


class Overview(Response):
    queues: list[QueueSummary] = []
    pools: list[PoolSummary] = []
    executors: list[ExecutorOverview] = []
