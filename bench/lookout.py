"""Lookout's jobs table on a large database: latency of filtered, sorted pages of 100 jobs.

    python bench/lookout.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/lookout_bench \\
        --jobs 1000000 --reuse

Loads ``--jobs`` jobs through the event store (submitted + queued, then one or two more
events for most: 60% succeed, 10% fail, 5% are cancelled, 5% run, 20% stay queued) into 20
queues of skewed sizes, unless ``--reuse`` finds them loaded already. Then it runs a seeded
mix of the pages people ask for (queue and state filters, job set, owner, annotation, id
prefix; sorted by submission, last transition or priority) through
the query service, and prints JSON with ``p50_ms``, ``p95_ms`` and per-kind figures last.
The capped count the UI asks for beside a page is timed separately (``count_*``), and so is
a mix of ``--group-queries`` nested-grouping levels (``group_*``: counts and summed requests
by queue, state, job set, owner, node, pool or annotation, at the top or inside a queue's or
a state's group). HTTP and JSON encoding are not included (about a millisecond for a page of 100).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec
import psycopg
from sqlalchemy import func, select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.dialects import is_postgres, libpq_conninfo, normalise_url
from armada.lookout.grouping import group_jobs
from armada.lookout.jobs import count_jobs, jobs_page
from armada.lookout.wire import (
    CountRequest,
    GroupJobsRequest,
    GroupKey,
    GroupValue,
    JobFilter,
    JobsRequest,
    Order,
)
from armada.model import events as ev
from armada.model.ids import new_run_id
from bench.common import report, rss_mb
from tests.factories import make_job, submission

QUEUES = 20
CHUNK = 2000
STATES = ["QUEUED", "LEASED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"]


def queue_of(index: int) -> str:
    """Skewed queue sizes: queue-0 holds about a quarter of all jobs, queue-19 under 1%."""
    return f"queue-{min(QUEUES - 1, int(random.Random(index).paretovariate(1.2)) - 1)}"


def job_events(index: int, now: datetime) -> tuple[list[ev.Event], list[ev.Event]]:
    """A job's submission and, separately, what happened to it later."""
    queue = queue_of(index)
    job = make_job(
        queue=queue,
        job_set_id=f"{queue}-set-{index % 500}",
        priority=float(index % 7),
        annotations={"team": f"team-{index % 10}", "sweep": str(index % 1000)},
    )
    job = msgspec.structs.replace(job, owner=f"user-{index % 50}")
    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id, "created": now}
    roll = index % 20
    later: list[ev.Event] = []
    if roll < 12:
        later = [ev.JobSucceeded(**env)]
    elif roll < 14:
        later = [ev.JobFailed(**env, reason="exit code 1", exit_code=1)]
    elif roll < 15:
        later = [ev.JobCancelled(**env, reason="bench")]
    elif roll < 16:
        run = {**env, "run_id": new_run_id()}
        later = [
            ev.JobLeased(**run, cluster_id="cluster-1", node_id=f"node-{index % 500}"),
            ev.JobRunning(**run),
        ]
    return submission(job, now), later


async def load(database: Database, total: int, batch: int) -> float:
    """Append ``total`` jobs' events in chunks; returns events per second."""
    events = 0
    start = time.perf_counter()
    for first in range(0, total, CHUNK):
        now = datetime.now(UTC)
        lives = [job_events(i, now) for i in range(first, min(total, first + CHUNK))]
        ordered = [e for submitted, _ in lives for e in submitted] + [e for _, later in lives for e in later]
        for offset in range(0, len(ordered), batch):
            await database.store.append(ordered[offset : offset + batch])
        events += len(ordered)
        if first % 100_000 == 0:
            print(f"loaded {first + len(lives):,} jobs", file=sys.stderr, flush=True)
    return events / (time.perf_counter() - start)


def ensure_database(url: str) -> None:
    """Create the named PostgreSQL database if it does not exist (so ``--reuse`` can find it)."""
    parsed = normalise_url(url)
    if not parsed.drivername.startswith("postgresql"):
        return
    admin = libpq_conninfo(parsed.set(database="postgres").render_as_string(hide_password=False))
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (parsed.database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{parsed.database}"')


def query_mix(rng: random.Random, sample_ids: list[str]) -> list[tuple[str, JobsRequest]]:
    """The pages people ask for, with random queues, states and pages."""

    def queue() -> str:
        return f"queue-{rng.randrange(QUEUES)}"

    def page(
        name: str, order: str = "submitted", direction: str = "desc", skip: int = 0, **f: object
    ) -> tuple[str, JobsRequest]:
        request = JobsRequest(
            filter=JobFilter(**f), order=Order(field=order, direction=direction), skip=skip, take=100
        )  # type: ignore[arg-type]
        return name, request

    kinds: list[Callable[[], tuple[str, JobsRequest]]] = [
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
        lambda: page("id prefix", job_id=rng.choice(sample_ids)[:9]),
        lambda: page("queue/priority", "priority", queue=queue()),
    ]
    return [rng.choice(kinds)() for _ in range(10_000)]


def group_mix(rng: random.Random) -> list[tuple[str, GroupJobsRequest]]:
    """Levels of nested grouping people open: the top level, and inside a queue or a state."""

    def queue() -> GroupValue:
        return GroupValue(column="queue", value=f"queue-{rng.randrange(QUEUES)}")

    def level(
        name: str, column: str, *within: GroupValue, annotation: str = ""
    ) -> tuple[str, GroupJobsRequest]:
        key = GroupKey(column=column, annotation=annotation)  # type: ignore[arg-type]
        return name, GroupJobsRequest(group_by=key, filter=JobFilter(within=list(within)))

    running = GroupValue(column="state", value="RUNNING")
    kinds: list[Callable[[], tuple[str, GroupJobsRequest]]] = [
        lambda: level("top: queue", "queue"),
        lambda: level("top: state", "state"),
        lambda: level("queue > state", "state", queue()),
        lambda: level("queue > jobSet", "jobSet", queue()),
        lambda: level("queue > owner", "owner", queue()),
        lambda: level("queue > annotation", "annotation", queue(), annotation="team"),
        lambda: level("running > node", "node", running),
        lambda: level("running > pool", "pool", running),
        lambda: level("queue > state > annotation", "annotation", queue(), running, annotation="team"),
    ]
    return [rng.choice(kinds)() for _ in range(10_000)]


async def time_groups(database: Database, count: int) -> dict[str, object]:
    """Latency of ``count`` grouping levels from :func:`group_mix`."""
    mix = group_mix(random.Random(11))[:count]
    for _, request in mix[:5]:
        await group_jobs(database.store, request, None)
    timings: dict[str, list[float]] = {}
    for name, request in mix:
        start = time.perf_counter()
        await group_jobs(database.store, request, None)
        timings.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    every = sorted(t for ts in timings.values() for t in ts)
    return {
        "group_by_kind_p95_ms": {
            name: round(percentile(sorted(ts), 95), 1) for name, ts in sorted(timings.items())
        },
        "group_p50_ms": round(statistics.median(every), 1),
        "group_p95_ms": round(percentile(every, 95), 1),
    }


async def run(
    url: str, total: int, batch: int, queries: int, reuse: bool, group_queries: int
) -> dict[str, object]:
    ensure_database(url)
    database = await Database(url).open(listen=False)
    try:
        async with database.engine.connect() as conn:
            loaded = int(await conn.scalar(select(func.count()).select_from(schema.jobs)) or 0)
        rate = None
        if not (reuse and loaded >= total):
            if loaded:
                raise SystemExit(f"the database already holds {loaded:,} jobs: use --reuse or a new database")
            rate = await load(database, total, batch)
            loaded = total
            if is_postgres(database.engine):
                async with database.engine.begin() as conn:
                    await conn.exec_driver_sql("ANALYZE")  # every view, job_states too
        async with database.engine.connect() as conn:
            sample = list(await conn.scalars(select(schema.jobs.c.job_id).limit(1000)))
        mix = query_mix(random.Random(7), sample)[:queries]
        for _, request in mix[:20]:  # warm the cache, as a running server's would be
            await jobs_page(database.store, request, None)
        timings: dict[str, list[float]] = {}
        counts: list[float] = []
        for name, request in mix:
            start = time.perf_counter()
            await jobs_page(database.store, request, None)
            timings.setdefault(name, []).append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await count_jobs(database.store, CountRequest(filter=request.filter), None)
            counts.append((time.perf_counter() - start) * 1000)
        every = sorted(t for ts in timings.values() for t in ts)
        counts.sort()
        groups = await time_groups(database, group_queries) if group_queries else {}
        pages = (
            {
                "by_kind_p95_ms": {
                    name: round(percentile(sorted(ts), 95), 1) for name, ts in sorted(timings.items())
                },
                "count_p50_ms": round(statistics.median(counts), 1),
                "count_p95_ms": round(percentile(counts, 95), 1),
                "p50_ms": round(statistics.median(every), 1),
                "p95_ms": round(percentile(every, 95), 1),
            }
            if every
            else {}
        )
        return {
            "benchmark": "lookout",
            "database": database.engine.dialect.name,
            "jobs": loaded,
            "queries": len(every),
            "load_events_per_second": round(rate) if rate else None,
            **groups,
            "rss_mb": rss_mb(),
            **pages,
        }
    finally:
        await database.close()


def percentile(ordered: list[float], pct: float) -> float:
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/armada_lookout_bench"
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=2000, help="events per append while loading")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--reuse", action="store_true", help="keep jobs already loaded into the database")
    parser.add_argument("--group-queries", type=int, default=100, help="grouping levels to time (0: none)")
    parser.add_argument("--only-groups", action="store_true", help="time the grouping levels only")
    args = parser.parse_args()
    queries = 0 if args.only_groups else args.queries
    report(
        asyncio.run(run(args.database_url, args.jobs, args.batch, queries, args.reuse, args.group_queries))
    )


if __name__ == "__main__":
    main()
