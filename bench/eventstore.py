"""Append synthetic job events through the real ``append()`` (projections included).

    python bench/eventstore.py --database-url URL --events 200000 --batch 1000

Each job contributes its whole life (submitted, queued, leased, running, succeeded), so
the projections do inserts and updates of jobs and runs as in production. With
``--writers N`` N appends of ``--batch`` events are in flight at once, as a busy server's
submissions, decisions and run reports are (they share transactions: group commit). The
last line is JSON with ``events_per_second``, this process's and (PostgreSQL) the database backends'
CPU seconds per 1,000 events, ``rss_mb`` and ``database``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.eventstore.database import Database
from armada.eventstore.dialects import libpq_conninfo, normalise_url
from armada.model import events as ev
from armada.model.ids import new_run_id
from bench.common import database_arguments, report, rss_mb
from bench.usage import backend_cpu
from tests.factories import make_job, submission


def job_life(index: int) -> list[ev.Event]:
    job = make_job(queue=f"queue-{index % 10}", job_set_id=f"set-{index % 100}")
    now = datetime.now(UTC)
    env = {
        "queue": job.queue,
        "job_set_id": job.job_set_id,
        "job_id": job.id,
        "run_id": new_run_id(),
        "created": now,
    }
    return [
        *submission(job, now),
        ev.JobLeased(**env, cluster_id="cluster-1", node_id=f"node-{index % 1000}"),
        ev.JobRunning(**env, node_name=f"node-{index % 1000}", pod_name=f"armada-{job.id}-0"),
        ev.JobSucceeded(**env, node_name=f"node-{index % 1000}"),
    ]


async def run(url: str, total: int, batch: int, writers: int) -> dict[str, object]:
    database = await Database(url).open(listen=False)
    try:
        # Leases, runs and completions arrive in later batches than submissions, as in life.
        lives = [job_life(i) for i in range(total // 5)]
        ordered = [e for phase in range(5) for life in lives for e in life[phase : phase + 1]]
        backends = _backends(url)
        cpu_before, db_before = time.process_time(), backends()
        start = time.perf_counter()
        chunks = [ordered[offset : offset + batch] for offset in range(0, len(ordered), batch)]
        for first in range(0, len(chunks), writers):  # the append lock keeps them in order
            await asyncio.gather(*(database.store.append(chunk) for chunk in chunks[first : first + writers]))
        elapsed = time.perf_counter() - start
        cpu, db_after = time.process_time() - cpu_before, backends()
        db_cpu = sum(used - db_before.get(pid, 0.0) for pid, used in db_after.items())
        per_1000 = 1000 / len(ordered)
        return {
            "benchmark": "eventstore",
            "database": database.engine.dialect.name,
            "events": len(ordered),
            "batch": batch,
            "writers": writers,
            "seconds": round(elapsed, 3),
            "events_per_second": round(len(ordered) / elapsed),
            "cpu_s_per_1000_events": round(cpu * per_1000, 4),
            "postgres_cpu_s_per_1000_events": round(db_cpu * per_1000, 4),
            "rss_mb": rss_mb(),
        }
    finally:
        await database.close()


def _backends(url: str) -> Callable[[], dict[int, float]]:
    """CPU seconds by PostgreSQL backend of the benchmark's database (none for SQLite)."""
    parsed = normalise_url(url)
    if parsed.get_backend_name() != "postgresql":
        return dict
    admin = libpq_conninfo(parsed.set(database="postgres").render_as_string(hide_password=False))
    return lambda: backend_cpu(admin, str(parsed.database))


def main() -> None:
    parser = database_arguments(__doc__, "sqlite:///bench-eventstore.db")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=1, help="appends in flight at once")
    args = parser.parse_args()
    report(asyncio.run(run(args.database_url, args.events, args.batch, args.writers)))


if __name__ == "__main__":
    main()
