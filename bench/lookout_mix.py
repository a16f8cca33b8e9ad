"""What bench/lookout.py asks: the jobs it loads, and the seeded mixes of pages and groups.

A job's namespace, priority class, pool, cluster, node and failure reason vary as on a
shared cluster (a few common values and a long tail), so each column filter of the jobs
table selects a realistic share: ``namespace`` one of 40, ``priorityClass`` one of 3,
``pool`` one of 4, ``cluster`` one of 8, ``node`` one of 2,000 (jobs that ran: 75%),
``reason`` one of 6 failure reasons (failed jobs: 10%). Submission times spread over 30
days, so time filters select a share of the whole. Job ids are ULIDs of the submission
time, as the submission path mints them (:mod:`armada.model.ids`), seeded by the job's index.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import msgspec

from armada.lookout.wire import (
    ColumnMatch,
    GroupJobsRequest,
    GroupKey,
    GroupValue,
    JobFilter,
    JobsRequest,
    Order,
)
from armada.model import events as ev
from armada.model.ids import DIGITS, TIME_DIGITS, new_run_id, time_prefix
from tests.factories import make_job, submission

QUEUES = 20
NAMESPACES = 40
PRIORITY_CLASSES = ["armada-default", "armada-preemptible", "armada-urgent"]
POOLS = ["cpu", "gpu", "spot", "big-memory"]
CLUSTERS = 8
NODES = 2000
REASONS = ["OOMKilled", "Error: exit code 1", "Evicted", "DeadlineExceeded", "ImagePullBackOff", "NodeLost"]
STATES = ["QUEUED", "LEASED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"]
#: Submissions spread over 30 days before this moment, one job every 2.6 s.
EPOCH = datetime(2026, 11, 1, tzinfo=UTC)
SPACING = timedelta(seconds=2.592)

Pick = Callable[[], tuple[str, JobsRequest]]


def queue_of(index: int) -> str:
    """Skewed queue sizes: queue-0 holds about a quarter of all jobs, queue-19 under 1%."""
    return f"queue-{min(QUEUES - 1, int(random.Random(index).paretovariate(1.2)) - 1)}"


def skewed(index: int, salt: int, count: int) -> int:
    """One of ``count`` values, the first few far more common than the rest."""
    return min(count - 1, int(random.Random(index * 7919 + salt).paretovariate(0.8)) - 1)


def submitted_at(index: int) -> datetime:
    return EPOCH + index * SPACING


def job_id_of(index: int) -> str:
    """The id the submission path would mint for job ``index``: its submission time's ULID."""
    rng = random.Random(-index)
    return time_prefix(submitted_at(index)) + "".join(rng.choices(DIGITS, k=26 - TIME_DIGITS))


def job_events(index: int) -> tuple[list[ev.Event], list[ev.Event]]:
    """A job's submission and, separately, what happened to it later: 60% succeed and 10%
    fail after a run, 5% are cancelled while queued, 5% run, 20% stay queued."""
    queue = queue_of(index)
    job = make_job(
        job_id=job_id_of(index),
        queue=queue,
        job_set_id=f"{queue}-set-{index % 500}",
        priority=float(index % 7),
        annotations={"team": f"team-{index % 10}", "sweep": str(index % 1000)},
    )
    job = msgspec.structs.replace(
        job,
        owner=f"user-{index % 50}",
        namespace=f"ns-{skewed(index, 1, NAMESPACES)}",
        priority_class_name=PRIORITY_CLASSES[skewed(index, 2, len(PRIORITY_CLASSES))],
    )
    submitted = submitted_at(index)
    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id}
    roll = index % 20
    run = {**env, "run_id": new_run_id(), "created": submitted + timedelta(seconds=30 + index % 600)}
    placed = {"cluster_id": f"cluster-{skewed(index, 3, CLUSTERS)}", "node_name": f"node-{index % NODES}"}
    lease = ev.JobLeased(
        **run,
        cluster_id=placed["cluster_id"],
        node_id=placed["node_name"],
        pool=POOLS[skewed(index, 4, len(POOLS))],
    )
    ended = {**run, "created": run["created"] + timedelta(seconds=60 + index % 3600)}
    later: list[ev.Event] = []
    if roll < 12:
        later = [lease, ev.JobRunning(**run, **placed), ev.JobSucceeded(**ended, **placed)]
    elif roll < 14:
        reason = REASONS[skewed(index, 5, len(REASONS))]
        failed = ev.JobFailed(**ended, **placed, reason=reason, exit_code=1 + index % 3)
        later = [lease, ev.JobRunning(**run, **placed), failed]
    elif roll < 15:
        later = [ev.JobCancelled(**env, created=run["created"], reason="bench")]
    elif roll < 16:
        later = [lease, ev.JobRunning(**run, **placed)]
    return submission(job, submitted), later


def page_mix(rng: random.Random, sample_ids: list[str]) -> list[tuple[str, JobsRequest]]:
    """The pages people ask for: the table's own filters and sorts, then one column filter of
    each match type (alone and within a queue) in every sort order."""

    def queue() -> str:
        return f"queue-{rng.randrange(QUEUES)}"

    def page(
        name: str, order: str = "submitted", direction: str = "desc", skip: int = 0, **f: object
    ) -> tuple[str, JobsRequest]:
        request = JobsRequest(
            filter=JobFilter(**f), order=Order(field=order, direction=direction), skip=skip, take=100
        )  # type: ignore[arg-type]
        return name, request

    kinds: list[Pick] = [
        lambda: page("queue+state/submitted", queue=queue(), states=[rng.choice(STATES[:1] + STATES[3:7])]),
        lambda: page("queue/lastTransition", "lastTransition", queue=queue()),
        lambda: page(
            "state/lastTransition", "lastTransition", states=[rng.choice(["RUNNING", "FAILED", "QUEUED"])]
        ),
        lambda: page("queue+2 states/submitted", queue=queue(), states=["QUEUED", "RUNNING"]),
        lambda: page(
            "jobSet/submitted",
            "submitted",
            "asc",
            queue=(q := queue()),
            job_set=f"{q}-set-{rng.randrange(500)}",
        ),
        lambda: page("all/submitted, page n", skip=100 * rng.randrange(10)),
        lambda: page("owner/submitted", owner=f"user-{rng.randrange(50)}"),
        lambda: page(
            "queue+annotation/submitted", queue=queue(), annotations={"team": f"team-{rng.randrange(10)}"}
        ),
        lambda: page("annotation/submitted", annotations={"sweep": str(rng.randrange(1000))}),
        lambda: page("id prefix", job_id=rng.choice(sample_ids)[:9]),
        lambda: page("queue/priority", "priority", queue=queue()),
        lambda: page("all/priority asc", "priority", "asc"),
        lambda: page("all/lastTransition", "lastTransition"),
        lambda: page("pool/submitted", within=[GroupValue(column="pool", value=rng.choice(POOLS))]),
        lambda: page(
            "queue+pool/lastTransition",
            "lastTransition",
            queue=queue(),
            within=[GroupValue(column="pool", value=rng.choice(POOLS))],
        ),
    ]
    for name, match in column_matches(rng):
        kinds += [
            (lambda name=name, match=match: page(f"{name}/submitted", matches=[match()])),
            (
                lambda name=name, match=match: page(
                    f"queue+{name}/submitted", queue=queue(), matches=[match()]
                )
            ),
        ]
    kinds += [
        lambda: page(
            "namespace exact/priority", "priority", matches=[_match("namespace", "exact", _namespace(rng))]
        ),
        lambda: page(
            "node exact/lastTransition", "lastTransition", matches=[_match("node", "exact", _node(rng))]
        ),
        lambda: page(
            "submitted window+namespace/submitted asc",
            "submitted",
            "asc",
            matches=[
                _match("submitted", "greaterThan", _moment(rng)),
                _match("namespace", "exact", _namespace(rng)),
            ],
        ),
    ]
    return [rng.choice(kinds)() for _ in range(20_000)]


def column_matches(rng: random.Random) -> list[tuple[str, Callable[[], ColumnMatch]]]:
    """One column filter of each match type on the columns people filter."""
    return [
        ("namespace exact", lambda: _match("namespace", "exact", _namespace(rng))),
        ("namespace startsWith", lambda: _match("namespace", "startsWith", f"ns-{rng.randrange(1, 4)}")),
        ("namespace contains", lambda: _match("namespace", "contains", str(rng.randrange(10, 40)))),
        ("namespace anyOf", lambda: _match("namespace", "anyOf", values=[_namespace(rng) for _ in range(3)])),
        ("priorityClass exact", lambda: _match("priorityClass", "exact", rng.choice(PRIORITY_CLASSES))),
        ("priorityClass anyOf", lambda: _match("priorityClass", "anyOf", values=PRIORITY_CLASSES[1:])),
        ("cluster exact", lambda: _match("cluster", "exact", f"cluster-{rng.randrange(CLUSTERS)}")),
        ("cluster exists", lambda: _match("cluster", "exists")),
        ("node exact", lambda: _match("node", "exact", _node(rng))),
        ("node startsWith", lambda: _match("node", "startsWith", f"node-{rng.randrange(1, 200)}")),
        ("node contains", lambda: _match("node", "contains", f"-{rng.randrange(100, 2000)}")),
        ("node anyOf", lambda: _match("node", "anyOf", values=[_node(rng) for _ in range(5)])),
        ("reason exact", lambda: _match("reason", "exact", rng.choice(REASONS))),
        ("reason contains", lambda: _match("reason", "contains", rng.choice(["oom", "exit code", "node"]))),
        ("reason exists", lambda: _match("reason", "exists")),
        ("priority greaterThan", lambda: _match("priority", "greaterThan", str(rng.randrange(7)))),
        ("priority lessThan", lambda: _match("priority", "lessThan", str(rng.randrange(1, 7)))),
        ("cpuMillis greaterThan", lambda: _match("cpuMillis", "greaterThan", "500")),
        ("submitted greaterThan", lambda: _match("submitted", "greaterThan", _moment(rng))),
        ("submitted lessThan", lambda: _match("submitted", "lessThan", _moment(rng))),
        ("lastTransition greaterThan", lambda: _match("lastTransition", "greaterThan", _moment(rng))),
    ]


def _match(column: str, match: str, value: str = "", values: list[str] | None = None) -> ColumnMatch:
    return ColumnMatch(column=column, match=match, value=value, values=values or [])  # type: ignore[arg-type]


def _namespace(rng: random.Random) -> str:
    return f"ns-{skewed(rng.randrange(1_000_000), 1, NAMESPACES)}"


def _node(rng: random.Random) -> str:
    return f"node-{rng.randrange(NODES)}"


def _moment(rng: random.Random) -> str:
    return (EPOCH + timedelta(days=rng.uniform(0, 30))).isoformat()


def group_mix(rng: random.Random) -> list[tuple[str, GroupJobsRequest]]:
    """Levels of nested grouping people open: 1 to 4 levels deep, with and without filters."""

    def queue() -> GroupValue:
        return GroupValue(column="queue", value=f"queue-{rng.randrange(QUEUES)}")

    def level(
        name: str, column: str, *within: GroupValue, annotation: str = "", **f: object
    ) -> tuple[str, GroupJobsRequest]:
        key = GroupKey(column=column, annotation=annotation)  # type: ignore[arg-type]
        return name, GroupJobsRequest(group_by=key, filter=JobFilter(within=list(within), **f))  # type: ignore[arg-type]

    running = GroupValue(column="state", value="RUNNING")
    failed = GroupValue(column="state", value="FAILED")

    def pool() -> GroupValue:
        return GroupValue(column="pool", value=rng.choice(POOLS))

    def namespace() -> GroupValue:
        return GroupValue(column="namespace", value=_namespace(rng))

    kinds: list[Callable[[], tuple[str, GroupJobsRequest]]] = [
        lambda: level("1: queue", "queue"),
        lambda: level("1: state", "state"),
        lambda: level("1: namespace", "namespace"),
        lambda: level("1: pool", "pool"),
        lambda: level("2: queue > state", "state", queue()),
        lambda: level("2: queue > jobSet", "jobSet", queue()),
        lambda: level("2: queue > owner", "owner", queue()),
        lambda: level("2: queue > annotation", "annotation", queue(), annotation="team"),
        lambda: level("2: running > node", "node", running),
        lambda: level("2: running > pool", "pool", running),
        lambda: level("2: failed > node", "node", failed),
        lambda: level("2: namespace > priorityClass", "priorityClass", namespace()),
        lambda: level("3: queue > running > annotation", "annotation", queue(), running, annotation="team"),
        lambda: level("3: pool > queue > state", "state", pool(), queue()),
        lambda: level(
            "4: queue > state > pool > node",
            "node",
            queue(),
            GroupValue(column="state", value="SUCCEEDED"),
            pool(),
        ),
        lambda: level(
            "1 + filter: queue, namespace exact",
            "queue",
            matches=[_match("namespace", "exact", _namespace(rng))],
        ),
        lambda: level(
            "2 + filter: queue > state, submitted > t",
            "state",
            queue(),
            matches=[_match("submitted", "greaterThan", _moment(rng))],
        ),
        lambda: level(
            "2 + filter: queue > node, node startsWith",
            "node",
            queue(),
            matches=[_match("node", "startsWith", f"node-{rng.randrange(1, 20)}")],
        ),
    ]
    return [rng.choice(kinds)() for _ in range(20_000)]
