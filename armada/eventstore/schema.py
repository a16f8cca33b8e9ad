"""Tables: the append-only ``events`` log, the views projected from it, and a few that are not.

The views (:data:`VIEWS`: ``queues``, ``jobs``, ``job_states``, ``runs``, ``executors``,
``nodes``, ``retry_policies``, the operators' settings and cordons, Lookout's saved views)
hold nothing that is not derivable from the log; ``armada admin rebuild-views`` recreates
them by replay. They carry no foreign keys, so a batch of projections can be applied in any
grouping. The other tables
are not replayed: log requests in flight, the leader's latest scheduling reports, the
schema's compatibility step, and retention's permit to delete.

Indexes cost every append, so only those a query needs exist. Job ids are ULIDs, so
ordering by ``job_id`` is ordering by submission time without an index on ``submitted``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    text,
)

metadata = MetaData()

# SQLite only auto-increments "INTEGER PRIMARY KEY"; we assign seq ourselves anyway.
SeqType = BigInteger().with_variant(Integer(), "sqlite")

events = Table(
    "events",
    metadata,
    Column("seq", SeqType, primary_key=True, autoincrement=False),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("queue", String(63), nullable=False),
    Column("job_set_id", String(1024), nullable=False),
    Column("job_id", String(26), nullable=False),
    Column("run_id", String(36), nullable=False),
    Column("type", String(32), nullable=False),
    Column("payload", LargeBinary, nullable=False),
    Index("ix_events_job_set", "queue", "job_set_id", "seq"),
    Index("ix_events_job", "job_id", "seq"),
)

queues = Table(
    "queues",
    metadata,
    Column("name", String(63), primary_key=True),
    Column("priority_factor", Double, nullable=False),
    Column("cordoned", Boolean, nullable=False),
    Column("spec", JSON, nullable=False),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("updated", DateTime(timezone=True), nullable=False),
)

retry_policies = Table(
    "retry_policies",
    metadata,
    Column("name", String(63), primary_key=True),
    Column("spec", JSON, nullable=False),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("updated", DateTime(timezone=True), nullable=False),
)

jobs = Table(
    "jobs",
    metadata,
    Column("job_id", String(26), primary_key=True),
    Column("queue", String(63), nullable=False),
    Column("job_set_id", String(1024), nullable=False),
    Column("owner", String(256), nullable=False),
    Column("namespace", String(256), nullable=False),
    Column("client_id", String(100), nullable=True),
    Column("priority", Double, nullable=False),
    Column("priority_class", String(256), nullable=False),
    Column("state", String(16), nullable=False),
    Column("submitted", DateTime(timezone=True), nullable=False),
    Column("last_transition", DateTime(timezone=True), nullable=False),
    Column("cpu_millis", BigInteger, nullable=False),
    Column("memory_bytes", BigInteger, nullable=False),
    Column("gpu", BigInteger, nullable=False),
    Column("gang_id", String(256), nullable=True),
    Column("annotations", JSON, nullable=False),
    Column("latest_run_id", String(36), nullable=True),
    Column("cluster", String(256), nullable=True),
    Column("node", String(256), nullable=True),
    Column("exit_code", Integer, nullable=True),
    Column("reason", String, nullable=True),
    Column("cancel_reason", String, nullable=True),
    Column("cancel_user", String(256), nullable=True),
    Column("cancel_ts", DateTime(timezone=True), nullable=True),
    Column("cancel_requested", Boolean, nullable=False),
    Column("preempt_requested", Boolean, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("spec", LargeBinary, nullable=False),
    # No index here covers a column a job's state change sets (``job_states`` indexes those)
    # but the failure reason, so with room on each page a state change is a HOT update (no
    # index entry is written) except a failure's or a preemption's.
    # A job set's jobs in submission order (Lookout's page of a job set; migration 0008).
    Index("ix_jobs_job_set", "queue", "job_set_id", "job_id"),
    # Lookout's pages (migration 0002): a queue's jobs by submission or by priority.
    Index("ix_jobs_queue_submitted", "queue", "job_id"),
    Index("ix_jobs_queue_priority", "queue", "priority", "job_id"),
    # Lookout's column filters across queues (migration 0014): one value's jobs in
    # submission order, every job by priority. The reason is set when a job fails or is
    # preempted (that update is not HOT): partial, so other jobs have no entry. The node
    # has none here (it would make every lease's update write an entry into each index):
    # ``ix_runs_node`` finds a node's jobs.
    Index("ix_jobs_namespace", "namespace", "job_id"),
    Index("ix_jobs_priority", "priority", "job_id"),
    # A namespace's jobs by priority (migration 0015): neither index above serves both a
    # common and a rare namespace, and SQLite's statistics cannot tell them apart.
    Index("ix_jobs_namespace_priority", "namespace", "priority", "job_id"),
    Index(
        "ix_jobs_reason",
        "reason",
        "job_id",
        postgresql_where=text("reason IS NOT NULL"),
        sqlite_where=text("reason IS NOT NULL"),
    ),
    Index(
        "ix_jobs_client_id",
        "queue",
        "client_id",
        postgresql_where=text("client_id IS NOT NULL"),
        sqlite_where=text("client_id IS NOT NULL"),
    ),
    postgresql_with={"fillfactor": 50},
)

#: Each job's state and last transition again, narrow and indexed: what is looked up or
#: sorted by state or transition time reads this table (joined to ``jobs`` by ``job_id``),
#: so a state change rewrites these index entries only, never the wide ``jobs`` row's.
job_states = Table(
    "job_states",
    metadata,
    Column("job_id", String(26), primary_key=True),
    Column("queue", String(63), nullable=False),
    Column("state", String(16), nullable=False),
    Column("last_transition", DateTime(timezone=True), nullable=False),
    # Two indexes, each entry rewritten by every state change: a queue's or a state's jobs
    # by last transition (several states' lists are merged: ``lookout.jobs.page_query``).
    Index("ix_job_states_queue_state", "queue", "state", "last_transition"),
    Index("ix_job_states_state_transition", "state", "last_transition"),
)

#: ``jobs`` with their ``job_states`` row: filter or sort on the latter's state columns.
jobs_and_states = jobs.join(job_states, job_states.c.job_id == jobs.c.job_id)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("job_id", String(26), nullable=False),
    Column("queue", String(63), nullable=False),
    Column("cluster", String(256), nullable=False),
    Column("node", String(256), nullable=False),
    Column("pool", String(256), nullable=False),
    Column("state", String(16), nullable=False),
    Column("leased", DateTime(timezone=True), nullable=False),
    Column("pending", DateTime(timezone=True), nullable=True),
    Column("started", DateTime(timezone=True), nullable=True),
    Column("finished", DateTime(timezone=True), nullable=True),
    Column("exit_code", Integer, nullable=True),
    Column("reason", String, nullable=True),
    Index("ix_runs_job", "job_id"),
    # Lookout's node filter: the jobs that ran on a node (migration 0014). A run's node is
    # set when it is inserted, so this costs each lease one entry and no update.
    Index("ix_runs_node", "node", "job_id"),
    # Half of each page free: both state changes of a run are HOT updates (no index writes;
    # migration 0007).
    postgresql_with={"fillfactor": 50},
)

executors = Table(
    "executors",
    metadata,
    Column("executor_id", String(256), primary_key=True),
    Column("pool", String(256), nullable=False),
    Column("node_count", Integer, nullable=False),
    Column("first_seen", DateTime(timezone=True), nullable=False),
    Column("last_seen", DateTime(timezone=True), nullable=False),
)

nodes = Table(
    "nodes",
    metadata,
    Column("executor_id", String(256), primary_key=True),
    Column("name", String(256), primary_key=True),
    Column("pool", String(256), nullable=False),
    Column("spec", JSON, nullable=False),
    Column("unschedulable", Boolean, nullable=False),
    Column("ready", Boolean, nullable=False),
    Column("updated", DateTime(timezone=True), nullable=False),
)

#: Upstream's executor settings, kept apart from ``executors``: a cordon may be set before
#: an executor first reports and outlives its being forgotten.
executor_settings = Table(
    "executor_settings",
    metadata,
    Column("executor_id", String(256), primary_key=True),
    Column("cordoned", Boolean, nullable=False),
    Column("cordon_reason", String, nullable=False),
    Column("set_by", String, nullable=False),
    Column("updated", DateTime(timezone=True), nullable=False),
)

#: Nodes an operator cordoned (a row per cordoned node; uncordoning deletes it).
node_cordons = Table(
    "node_cordons",
    metadata,
    Column("executor_id", String(256), primary_key=True),
    Column("name", String(256), primary_key=True),
    Column("reason", String, nullable=False),
    Column("set_by", String, nullable=False),
    Column("updated", DateTime(timezone=True), nullable=False),
)

#: Lookout's saved views: a user's named jobs-page states (``state`` is the page's own JSON).
lookout_views = Table(
    "lookout_views",
    metadata,
    Column("user_name", String(256), primary_key=True),
    Column("name", String(64), primary_key=True),
    Column("state", JSON, nullable=False),
    Column("updated", DateTime(timezone=True), nullable=False),
)

VIEWS = (
    queues,
    jobs,
    job_states,
    runs,
    executors,
    nodes,
    retry_policies,
    executor_settings,
    node_cordons,
    lookout_views,
)

#: Usage figures: integers that outgrow 64 bits are exact on PostgreSQL (NUMERIC); SQLite
#: turns an INTEGER past 2**63 into REAL.
Amount = Numeric(38, 0).with_variant(BigInteger(), "sqlite")


def _rollup(name: str, *columns: Column[Any]) -> Table:
    """A usage rollup: figures per part x day x queue x owner x pool x priority class x ``columns``.

    ``part`` is ``log`` for the figures of jobs the log still holds (rebuilt by replay) and
    ``pruned`` for those of jobs retention removed (moved there as they are pruned, never
    rebuilt): the sum of both parts is the figure (:mod:`armada.eventstore.usage`).
    """
    return Table(
        name,
        metadata,
        Column("part", String(8), primary_key=True),
        Column("day", String(10), primary_key=True),
        Column("queue", String(63), primary_key=True),
        Column("owner", String(256), primary_key=True),
        Column("pool", String(256), primary_key=True),
        Column("priority_class", String(256), primary_key=True),
        *columns,
    )


#: Resource-seconds per run outcome (``armada.eventstore.usage_fold``).
usage = _rollup(
    "usage",
    Column("outcome", String(16), primary_key=True),
    Column("resource", String(256), primary_key=True),
    Column("amount", Amount, nullable=False),
)

#: Leases and the milliseconds their jobs waited, per wait bucket.
usage_waits = _rollup(
    "usage_waits",
    Column("bucket", Integer, primary_key=True, autoincrement=False),
    Column("leases", BigInteger, nullable=False),
    Column("waited", Amount, nullable=False),
)

ROLLUPS = (usage, usage_waits)

#: Log requests in flight between the replica a user asked and the one an executor polls
#: (``armada.eventstore.log_mailbox``). Not a view and not state: transient messages, never
#: replayed, deleted within a minute of being asked.
log_requests = Table(
    "log_requests",
    metadata,
    Column("request_id", String(32), primary_key=True),
    Column("executor_id", String(256), nullable=False),
    Column("order", LargeBinary, nullable=False),
    Column("asked", Double, nullable=False),
    Column("taken", Double, nullable=True),
    Column("answer", LargeBinary, nullable=True),
    Index("ix_log_requests_executor", "executor_id", "taken"),
)

#: The leader's latest scheduling reports, by name, so that every replica (and every worker
#: of ``serve --workers``) answers with them (``armada.eventstore.shared_reports``). Not a
#: view: a cache the leader overwrites after its cycles, never replayed.
scheduler_reports = Table(
    "scheduler_reports",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("body", LargeBinary, nullable=False),
    Column("written", DateTime(timezone=True), nullable=False),
)

#: How far the schema's contract steps have gone (one row): a replica of an older version
#: reads it when the database's revision is newer than its own head, to decide whether it
#: may still run on it (:mod:`armada.eventstore.migrate`).
schema_compatibility = Table(
    "schema_compatibility",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("contract_steps", Integer, nullable=False),
    Column("revision", String(64), nullable=False),
)

#: Retention's permit to delete from the append-only ``events``: the guard (a trigger) lets a
#: DELETE through only while this table has a row, and retention inserts its row and deletes it
#: again inside its own transaction, so no other transaction ever sees one (migration 0010).
log_pruning = Table(
    "log_pruning",
    metadata,
    Column("pruning", Boolean, primary_key=True),
)
