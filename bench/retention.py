"""Retention's cost to the live system, and the bytes a job takes, through the real event store.

    python bench/retention.py --database-url URL --expired 100000 --rounds 3

Fills the database with ``--expired`` finished jobs (a whole life each: submitted, queued,
leased, running, succeeded; a month old) and reports the bytes each took (database size
before and after, divided by the jobs). Then submissions are timed in interleaved rounds,
``--rounds`` each way: without pruning, and while the pruner works through the backlog
(``--prune-batch`` jobs a batch, as ``retention.batchSize``). A submission is one append of
``--batch`` jobs' events in the prompt lane, as the submit route's, ``--concurrency`` at a
time, ``--submissions`` per round; the pruner runs as the server's does (paced batches). The
last line is JSON: per mode the median over rounds of the submissions' p99 (ms), jobs pruned
per second while pruning, the mean of a batch's turn holding the append lock (its deletes,
and any earlier writer's events of its group written first) and of its commit, and
``bytes_per_job``.

With ``--plateau-days D`` it then simulates D days of ``--jobs-per-day`` finished jobs kept
``--keep-days`` (the pruner's clock is simulated) and prints the database size after each
day's pruning: it should stop growing after ``--keep-days``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.eventstore import retention
from armada.eventstore.database import Database
from armada.eventstore.store import Lane, PreparedEvents
from armada.model import events as ev
from armada.model.ids import new_run_id
from armada.services.retention import Pruner
from armada.services.settings import RetentionSettings
from bench.common import database_arguments, report
from tests.factories import make_job, submission

MONTH_AGO = datetime.now(UTC) - timedelta(days=30)


def finished_life(index: int, when: datetime = MONTH_AGO) -> list[ev.Event]:
    job = make_job(queue=f"queue-{index % 10}", job_set_id=f"set-{index % 100}")
    env = {"queue": job.queue, "job_set_id": job.job_set_id, "job_id": job.id, "run_id": new_run_id()}
    node = f"node-{index % 1000}"
    return [
        *submission(job, when),
        ev.JobLeased(**env, cluster_id="cluster-1", node_id=node, created=when),
        ev.JobRunning(**env, node_name=node, pod_name=f"armada-{job.id}-0", created=when),
        ev.JobSucceeded(**env, node_name=node, created=when),
    ]


async def size(database: Database) -> int:
    async with database.engine.connect() as conn:
        if database.is_postgres:  # count what autovacuum has not yet counted
            await conn.exec_driver_sql("ANALYZE")
        return await retention.database_size(conn)


async def fill(database: Database, jobs: int) -> None:
    for start in range(0, jobs, 1000):
        events = [event for index in range(start, min(jobs, start + 1000)) for event in finished_life(index)]
        await database.store.append(events)
    await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1")])  # holds the head


async def submissions(database: Database, count: int, batch: int, concurrency: int) -> list[float]:
    """Seconds each of ``count`` submissions of ``batch`` jobs took, ``concurrency`` at a time."""
    latencies: list[float] = []
    remaining = count

    async def submitter() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            prepared = PreparedEvents(
                [event for _ in range(batch) for event in submission(make_job(queue="live"))]
            )
            started = time.perf_counter()
            async with database.store.transaction(lane=Lane.PROMPT) as tx:
                tx.append(prepared)
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(submitter() for _ in range(concurrency)))
    return latencies


async def prune_until(pruner: Pruner, stop: asyncio.Event) -> int:
    """Prune as the server does (batches paced) until ``stop``; return the jobs pruned."""
    cutoff = pruner.cutoff()
    assert cutoff is not None
    pruned = 0
    async for batch in pruner.batches(cutoff):
        pruned += batch.pruned
        if batch.chosen < pruner.settings.batch_size:
            raise SystemExit("the backlog ran out: raise --expired or lower --submissions")
        if stop.is_set():
            break
    return pruned


async def plateau(database: Database, days: int, per_day: int, keep_days: int, vacuum: bool) -> list[int]:
    """Simulated days of ``per_day`` finished jobs, keeping ``keep_days``: the database's size
    after each day's pruning (PostgreSQL: ``vacuum`` runs VACUUM then, else autovacuum's pace)."""
    start = datetime.now(UTC) - timedelta(days=days)
    sizes = []
    for day in range(days):
        now = start + timedelta(days=day)
        for first in range(0, per_day, 1000):
            lives = range(first, min(per_day, first + 1000))
            await database.store.append([event for index in lives for event in finished_life(index, now)])
        await database.store.append([ev.ExecutorHeartbeat(executor_id="cluster-1", created=now)])
        settings = RetentionSettings(expire_after=f"{keep_days * 24}h")
        await Pruner(database.store, settings, clock=lambda now=now: now.timestamp()).prune_once()
        if vacuum and database.is_postgres:
            async with database.engine.connect() as raw:
                conn = await raw.execution_options(isolation_level="AUTOCOMMIT")
                await conn.exec_driver_sql("VACUUM")
        sizes.append(await size(database))
        print(f"day {day}: {sizes[-1] / 2**20:.1f} MiB", file=sys.stderr)
    return sizes


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] * 1000


async def main() -> None:
    parser = database_arguments(__doc__, "sqlite:///bench-retention.db")
    parser.add_argument("--expired", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--submissions", type=int, default=300, help="submissions per round")
    parser.add_argument("--batch", type=int, default=100, help="jobs per submission")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--prune-batch", type=int, default=RetentionSettings().batch_size)
    parser.add_argument("--plateau-days", type=int, default=0, help="then simulate this many days")
    parser.add_argument("--jobs-per-day", type=int, default=5000)
    parser.add_argument("--keep-days", type=int, default=3)
    parser.add_argument("--vacuum", action="store_true", help="PostgreSQL: VACUUM after each day's pruning")
    args = parser.parse_args()
    database = await Database(args.database_url).open()
    try:
        empty = await size(database)
        started = time.perf_counter()
        await fill(database, args.expired)
        filled = await size(database)
        print(f"filled {args.expired} expired jobs in {time.perf_counter() - started:.0f}s", file=sys.stderr)
        settings = RetentionSettings(expire_after="24h", batch_size=args.prune_batch)
        pruner = Pruner(database.store, settings)
        off: list[float] = []
        on: list[float] = []
        rates: list[float] = []
        await submissions(database, 20, args.batch, args.concurrency)  # warm up
        bulk = database.store.waits.lanes[Lane.BULK]  # only the pruner writes in it from here on
        bulk_writes, bulk_turns, bulk_commits = bulk.writes, bulk.turn, bulk.commit
        for _ in range(args.rounds):
            off.append(p99(await submissions(database, args.submissions, args.batch, args.concurrency)))
            stop = asyncio.Event()
            pruning = asyncio.create_task(prune_until(pruner, stop))
            begun = time.perf_counter()
            on.append(p99(await submissions(database, args.submissions, args.batch, args.concurrency)))
            stop.set()
            rates.append(await pruning / (time.perf_counter() - begun))
            print(
                f"p99 off {off[-1]:.1f} ms, pruning {on[-1]:.1f} ms ({rates[-1]:.0f} jobs/s)", file=sys.stderr
            )
        if args.plateau_days:
            await pruner.prune_once()  # the rest of the backlog first
        sizes = await plateau(database, args.plateau_days, args.jobs_per_day, args.keep_days, args.vacuum)
    finally:
        await database.close()
    report(
        {
            "database": "postgresql" if database.is_postgres else "sqlite",
            "expired_jobs": args.expired,
            "bytes_per_job": round((filled - empty) / args.expired),
            "submit_p99_ms_off": round(statistics.median(off), 1),
            "submit_p99_ms_pruning": round(statistics.median(on), 1),
            "pruned_jobs_per_second": round(statistics.median(rates)),
            "prune_turn_mean_ms": round((bulk.turn - bulk_turns) / (bulk.writes - bulk_writes) * 1000, 2),
            "prune_commit_mean_ms": round(
                (bulk.commit - bulk_commits) / (bulk.writes - bulk_writes) * 1000, 2
            ),
            "prune_batch": args.prune_batch,
            "rounds": args.rounds,
            "plateau_mib_by_day": [round(value / 2**20, 1) for value in sizes],
            "jobs_per_day": args.jobs_per_day,
            "keep_days": args.keep_days,
        }
    )


if __name__ == "__main__":
    asyncio.run(main())
