"""Retention's cost to the live system, and the bytes a job takes, through the real event store.

    python bench/retention.py --database-url URL --expired 100000 --rounds 3

Fills the database with ``--expired`` finished jobs (a whole life each: submitted, queued,
leased, running, succeeded; a month old) and reports the bytes each took (database size
before and after, divided by the jobs). Then submissions are timed in interleaved rounds,
``--rounds`` each way: without pruning, and while the pruner works through the backlog
(``--prune-batch`` jobs a batch, as ``retention.batchSize``). A submission is one append of
``--batch`` jobs' events in the prompt lane, as the submit route's, ``--concurrency`` at a
time, ``--submissions`` per round; the pruner runs as the server's does (paced batches). The
last line is JSON: per mode the median over rounds of the submissions' p50 and p99 (ms),
jobs pruned per second while pruning, the mean time a batch held the append lock
(PostgreSQL: as the server measured it, from taking it shared to the COMMIT, in a
transaction of the batch's own; SQLite:
its deletes at the commit of the append group it joined, whose turn and wait for the
commit are given too), the batches deferred (the lock stayed busy past
``retention.LOCK_WAIT``), a submission's own turn (for comparison), and ``bytes_per_job``.
A backlog of millions fills faster with ``--copies``; ``--reuse``
keeps the one an earlier run left; ``--rounds 0`` only fills.

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

from sqlalchemy import text

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


#: Crockford's base32 as job ids spell it: copy ``n``'s job ids have its ``n + 1``-th letter
#: second (all of this century's ids have a ``1`` there), and its run ids start ``f`` and ``n``.
BASE32 = "0123456789abcdefghjkmnpqrstvwxyz"


def _job(column: str) -> str:
    return f"left({column}, 1) || substr('{BASE32}', t.n + 2, 1) || substr({column}, 3)"


def _run(column: str) -> str:
    tagged = f"'f' || to_hex(t.n % 16) || substr({column}, 3)"
    return f"CASE WHEN coalesce({column}, '') = '' THEN {column} ELSE {tagged} END"


def _rewrite(column: str, run_column: str) -> str:
    """``column``'s JSON bytes with the copy's job and run ids."""
    text_ = f"convert_from({column}, 'UTF8')"
    jobs = f"replace({text_}, x.job_id, {_job('x.job_id')})"
    ids = f"replace({jobs}, coalesce(x.{run_column}, '-'), {_run(f'x.{run_column}')})"
    return f"convert_to({ids}, 'UTF8')"


async def copy_backlog(database: Database, copies: int) -> None:
    """PostgreSQL: add ``copies`` copies of every job in SQL, each with new job and run ids
    (and in the log new sequence numbers after the head), so that a backlog of millions
    takes minutes, not the hour its appends would. The usage rollups' wait counts grow to
    match."""
    async with database.engine.begin() as conn:
        head = int(await conn.scalar(text("SELECT max(seq) FROM events")) or 0)
        changed = {
            "events": {
                "seq": f"x.seq + t.n * {head}",
                "run_id": _run("x.run_id"),
                "payload": _rewrite("x.payload", "run_id"),
            },
            "jobs": {"latest_run_id": _run("x.latest_run_id"), "spec": _rewrite("x.spec", "latest_run_id")},
            "job_states": {},
            "runs": {"run_id": _run("x.run_id")},
        }
        for table, columns in changed.items():
            names = (await conn.execute(text(f"SELECT * FROM {table} LIMIT 0"))).keys()
            values = [
                columns.get(name, _job("x.job_id") if name == "job_id" else f"x.{name}") for name in names
            ]
            await conn.execute(
                text(
                    f"INSERT INTO {table} SELECT {', '.join(values)} FROM {table} x"
                    f" CROSS JOIN generate_series(1, {copies}) AS t(n) WHERE x.job_id <> ''"
                )
            )
        await conn.execute(text(f"UPDATE usage_waits SET leases = leases * {copies + 1}"))
    async with database.engine.connect() as raw:
        conn = await raw.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM ANALYZE")


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


async def prune_until(pruner: Pruner, stop: asyncio.Event) -> tuple[int, int, int]:
    """Prune as the server does (batches paced) until ``stop``; return the jobs pruned, the
    batches and those deferred."""
    cutoff = pruner.cutoff()
    assert cutoff is not None
    pruned = batches = deferred = 0
    async for batch in pruner.batches(cutoff):
        pruned += batch.pruned
        batches += 1
        deferred += batch.deferred
        if batch.chosen < pruner.settings.batch_size:
            raise SystemExit("the backlog ran out: raise --expired or lower --submissions")
        if stop.is_set():
            break
    return pruned, batches, deferred


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


def percentile(values: list[float], rank: int) -> float:
    """The ``rank``-th percentile of ``values`` (seconds), in milliseconds."""
    return statistics.quantiles(values, n=100)[rank - 1] * 1000


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
    parser.add_argument(
        "--copies", type=int, default=0, help="PostgreSQL: then copy each job this many times (<= 15), in SQL"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="keep a backlog an earlier run left (no fill, no bytes per job)"
    )
    args = parser.parse_args()
    database = await Database(args.database_url).open()
    try:
        empty = await size(database)
        started = time.perf_counter()
        if not args.reuse:
            await fill(database, args.expired)
        if args.copies:
            await copy_backlog(database, args.copies)
        filled = await size(database)
        print(f"filled {args.expired} expired jobs in {time.perf_counter() - started:.0f}s", file=sys.stderr)
        settings = RetentionSettings(expire_after="24h", batch_size=args.prune_batch)
        pruner = Pruner(database.store, settings)
        off: list[list[float]] = []
        on: list[list[float]] = []
        rates: list[float] = []
        batches = deferred = 0
        if args.rounds:
            await submissions(database, 20, args.batch, args.concurrency)  # warm up
        bulk = database.store.waits.lanes[Lane.BULK]  # only the pruner writes in it from here on
        bulk_writes, bulk_turns, bulk_commits = bulk.writes, bulk.turn, bulk.commit
        prompt = database.store.waits.lanes[Lane.PROMPT]  # the submissions'
        prompt_writes, prompt_turns = prompt.writes, prompt.turn
        for _ in range(args.rounds):
            off.append(await submissions(database, args.submissions, args.batch, args.concurrency))
            stop = asyncio.Event()
            pruning = asyncio.create_task(prune_until(pruner, stop))
            begun = time.perf_counter()
            on.append(await submissions(database, args.submissions, args.batch, args.concurrency))
            stop.set()
            pruned, batched, put_off = await pruning
            rates.append(pruned / (time.perf_counter() - begun))
            batches += batched
            deferred += put_off
            print(
                f"p50 off {percentile(off[-1], 50):.1f} ms, pruning {percentile(on[-1], 50):.1f} ms; "
                f"p99 off {percentile(off[-1], 99):.1f} ms, pruning {percentile(on[-1], 99):.1f} ms "
                f"({rates[-1]:.0f} jobs/s)",
                file=sys.stderr,
            )
        joined = bulk.writes - bulk_writes
        timings = (
            {
                **{
                    f"submit_p{rank}_ms_{mode}": round(
                        statistics.median(percentile(values, rank) for values in rounds), 1
                    )
                    for rank in (50, 99)
                    for mode, rounds in (("off", off), ("pruning", on))
                },
                "pruned_jobs_per_second": round(statistics.median(rates)),
                "prune_locked_mean_ms": round(pruner.locked_seconds / max(1, batches - deferred) * 1000, 2),
                "prune_batches": batches,
                "prune_deferred": deferred,
                # SQLite's batches join append groups: their turns and waits for the commit.
                **{
                    f"prune_{part}_mean_ms": round(seconds / joined * 1000, 2) if joined else None
                    for part, seconds in (
                        ("turn", bulk.turn - bulk_turns),
                        ("commit", bulk.commit - bulk_commits),
                    )
                },
                "submit_turn_mean_ms": round(
                    (prompt.turn - prompt_turns) / (prompt.writes - prompt_writes) * 1000, 2
                ),
            }
            if args.rounds
            else {}  # (a fill only)
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
            "bytes_per_job": None if args.reuse else round((filled - empty) / args.expired),
            **timings,
            "prune_batch": args.prune_batch,
            "rounds": args.rounds,
            "plateau_mib_by_day": [round(value / 2**20, 1) for value in sizes],
            "jobs_per_day": args.jobs_per_day,
            "keep_days": args.keep_days,
        }
    )


if __name__ == "__main__":
    asyncio.run(main())
