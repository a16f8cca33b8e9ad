"""Failed runs decided by the retry engine: one executor batch through the real intake.

    python bench/retries.py --database-url URL --jobs 2000 --gang 4

``--jobs`` running jobs (in gangs of ``--gang`` members; 1: no gangs) of a queue with a retry
policy; one executor batch reports a retryable failure of one member of every gang, and the
server reads what the engine needs (the gangs, each member's budget), decides and appends
the retries (the other members stopped and requeued). The last line is JSON with
``failures_per_second`` and ``seconds`` (the batch, read and append included).
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.ids import new_run_id
from armada.model.jobs import GANG_CARDINALITY_ANNOTATION, GANG_ID_ANNOTATION
from armada.model.leases import RunEvent, RunEventBatch
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy, RetryRule
from armada.model.retry_engine import RetryEngineSettings
from armada.scheduler.run_events import RunEventIntake
from armada.scheduler.settings import SchedulerServiceSettings
from bench.common import database_arguments, report, rss_mb
from tests.factories import make_job, submission

POLICY = RetryPolicy(name="bench", retry_limit=3, rules=[RetryRule(action="Retry", on_category="transient")])


def running_gang(index: int, size: int) -> tuple[list[ev.Event], tuple[str, str]]:
    """A gang's (or a lone job's) events up to running, and its first member's job and run."""
    annotations = (
        {GANG_ID_ANNOTATION: f"g{index}", GANG_CARDINALITY_ANNOTATION: str(size)} if size > 1 else {}
    )
    events: list[ev.Event] = []
    first: tuple[str, str] = ("", "")
    for member in range(size):
        job = make_job(queue="q", job_set_id=f"set-{index % 50}", annotations=annotations)
        now = datetime.now(UTC)
        env = {
            "queue": "q",
            "job_set_id": job.job_set_id,
            "job_id": job.id,
            "run_id": new_run_id(),
            "created": now,
        }
        events += [
            *submission(job, now),
            ev.JobLeased(**env, cluster_id="c1", node_id=f"node-{index % 100}"),
            ev.JobRunning(**env, cluster_id="c1", node_name=f"node-{index % 100}"),
        ]
        if member == 0:
            first = (job.id, env["run_id"])
    return events, first


async def run(url: str, jobs: int, gang: int) -> dict[str, object]:
    database = await Database(url).open(listen=False)
    try:
        await database.store.append(
            [
                ev.RetryPolicyCreated(spec=POLICY),
                ev.QueueCreated(queue="q", spec=Queue(name="q", retry_policies=["bench"])),
            ]
        )
        failing: list[tuple[str, str]] = []
        for index in range(jobs // gang):
            events, first = running_gang(index, gang)
            await database.store.append(events)
            failing.append(first)
        intake = RunEventIntake(
            database.store,
            SchedulerServiceSettings(),
            RetryEngineSettings(enabled=True, global_max_retries=5),
        )
        batch = RunEventBatch(
            executor_id="c1",
            events=[
                RunEvent(
                    run_id=run_id, job_id=job_id, kind="failed", exit_code=42, failure_category="transient"
                )
                for job_id, run_id in failing
            ],
        )
        start = time.perf_counter()
        applied = await intake.report(batch)
        elapsed = time.perf_counter() - start
        assert applied == len(failing), (applied, len(failing))
        return {
            "benchmark": "retries",
            "database": database.engine.dialect.name,
            "jobs": jobs,
            "gang": gang,
            "failures": len(failing),
            "seconds": round(elapsed, 3),
            "failures_per_second": round(len(failing) / elapsed),
            "rss_mb": rss_mb(),
        }
    finally:
        await database.close()


def main() -> None:
    parser = database_arguments(__doc__, "sqlite:///bench-retries.db")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--gang", type=int, default=4)
    args = parser.parse_args()
    report(asyncio.run(run(args.database_url, args.jobs, args.gang)))


if __name__ == "__main__":
    main()
