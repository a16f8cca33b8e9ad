"""Lookout's jobs table on a large database: latency of filtered, sorted pages and of groups.

    python bench/lookout.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/lookout_bench \\
        --jobs 1000000 --reuse

Loads ``--jobs`` jobs through the event store into 20 queues of skewed sizes (what they
hold: :mod:`bench.lookout_mix`), unless ``--reuse`` finds them loaded already. Then it runs
``--queries`` pages of 100 from a seeded mix through the query service: the table's own
filters (queue, state, job set, owner, annotation, id prefix, pool) and one column filter of
each match type (exact, startsWith, contains, anyOf, exists, greaterThan, lessThan) on
namespace, priority class, cluster, node, failure reason, priority, CPU and the two times,
alone and within a queue, sorted by submission, last transition or priority. The capped
count the UI asks for beside a page is timed separately for the first ``--counts`` pages'
filters (``count_*``), and so is a mix of
``--group-queries`` nested-grouping levels (``group_*``: 1 to 4 levels deep, with and
without column filters). It prints p50/p95 per kind, then JSON with ``p50_ms``, ``p95_ms``
(pages), ``group_p50_ms``, ``group_p95_ms``, ``overall_p95_ms`` (pages and groups) and
the per-kind figures, last. HTTP and JSON encoding are not included (about a millisecond
for a page of 100).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from sqlalchemy import func, select

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.eventstore.dialects import is_postgres, libpq_conninfo, normalise_url
from armada.lookout.grouping import group_jobs
from armada.lookout.jobs import count_jobs, jobs_page
from armada.lookout.wire import CountRequest
from bench.common import report, rss_mb
from bench.lookout_mix import group_mix, job_events, page_mix

CHUNK = 2000


async def load(database: Database, total: int, batch: int) -> float:
    """Append ``total`` jobs' events in chunks; returns events per second."""
    events = 0
    start = time.perf_counter()
    for first in range(0, total, CHUNK):
        lives = [job_events(i) for i in range(first, min(total, first + CHUNK))]
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


async def timed(
    mix: Sequence[tuple[str, Any]], call: Callable[[Any], Awaitable[object]]
) -> dict[str, list[float]]:
    """Milliseconds of ``call`` for each request of ``mix``, by kind (after a warm-up)."""
    for _, request in mix[:10]:  # warm the cache, as a running server's would be
        await call(request)
    timings: dict[str, list[float]] = {}
    for name, request in mix:
        start = time.perf_counter()
        await call(request)
        timings.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    return timings


def summary(prefix: str, timings: dict[str, list[float]]) -> dict[str, object]:
    """p50 and p95 of each kind and of all, printed as a table and returned for the JSON."""
    kinds = {name: sorted(ts) for name, ts in sorted(timings.items())}
    every = sorted(t for ts in kinds.values() for t in ts)
    if not every:
        return {}
    for name, ts in kinds.items():
        print(
            f"{prefix:6} {name:45} n={len(ts):3} p50 {statistics.median(ts):8.1f} ms"
            f"  p95 {percentile(ts, 95):8.1f} ms",
            flush=True,
        )
    return {
        f"{prefix}by_kind_ms": {
            name: [round(statistics.median(ts), 1), round(percentile(ts, 95), 1)]
            for name, ts in kinds.items()
        },
        f"{prefix}p50_ms": round(statistics.median(every), 1),
        f"{prefix}p95_ms": round(percentile(every, 95), 1),
    }


async def run(
    url: str, total: int, batch: int, queries: tuple[int, int, int], reuse: bool
) -> dict[str, object]:
    """Load unless reused, then time ``queries``: pages, counts (of the first pages' filters)
    and grouping levels."""
    page_queries, count_queries, group_queries = queries
    ensure_database(url)
    database = await Database(url).open(listen=False)
    store = database.store
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
                # As autovacuum would leave it (some hosts run without): statistics of every
                # view, and a visibility map, without which index-only scans read the table.
                autocommit = database.engine.execution_options(isolation_level="AUTOCOMMIT")
                async with autocommit.connect() as conn:
                    await conn.exec_driver_sql("VACUUM ANALYZE")
        async with database.engine.connect() as conn:
            sample = list(await conn.scalars(select(schema.jobs.c.job_id).limit(1000)))
        pages_mix = page_mix(random.Random(7), sample)[:page_queries]
        pages = await timed(pages_mix, lambda request: jobs_page(store, request, None))
        counts = await timed(
            [("count", CountRequest(filter=request.filter)) for _, request in pages_mix[:count_queries]],
            lambda request: count_jobs(store, request, None),
        )
        groups = await timed(
            group_mix(random.Random(11))[:group_queries], lambda r: group_jobs(store, r, None)
        )
        every = sorted(t for timings in (pages, groups) for ts in timings.values() for t in ts)
        return {
            "benchmark": "lookout",
            "database": database.engine.dialect.name,
            "jobs": loaded,
            "queries": sum(map(len, pages.values())),
            "group_queries": sum(map(len, groups.values())),
            "load_events_per_second": round(rate) if rate else None,
            "rss_mb": rss_mb(),
            **summary("count_", {"count": counts.get("count", [])}),
            **summary("group_", groups),
            **summary("", pages),
            "overall_p95_ms": round(percentile(every, 95), 1) if every else None,
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
    parser.add_argument("--queries", type=int, default=800, help="pages to time")
    parser.add_argument("--counts", type=int, default=200, help="capped counts to time (0: none)")
    parser.add_argument("--reuse", action="store_true", help="keep jobs already loaded into the database")
    parser.add_argument("--group-queries", type=int, default=180, help="grouping levels to time (0: none)")
    parser.add_argument("--only-groups", action="store_true", help="time the grouping levels only")
    args = parser.parse_args()
    queries = (
        (0, 0, args.group_queries) if args.only_groups else (args.queries, args.counts, args.group_queries)
    )
    report(asyncio.run(run(args.database_url, args.jobs, args.batch, queries, args.reuse)))


if __name__ == "__main__":
    main()
