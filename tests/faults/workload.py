"""A steady workload for fault tests, and the checks every fault test ends with.

The :class:`Submitter` sends numbered jobs in batches from a background thread and retries a
batch until it gets a 200: every job carries a ``clientId``, so a retried batch whose first
answer was lost is deduplicated, not doubled. What it records is exactly the set of jobs the
system acknowledged. The checks then read the database directly (fast for 10,000 jobs) and
run ``armada admin check``.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections import Counter

import psycopg

from armada.client import ArmadaClient
from armada.eventstore.dialects import libpq_conninfo
from tests.e2e.cluster import job, wait_for
from tests.processes import armada_command, process_env

#: Server settings for fault tests: fast cycles and no scheduling rate limit.
LOAD_SERVER_ENV = {
    "ARMADA_SCHEDULER_CYCLE_PERIOD": "0.2",
    # Long enough that a loaded 2-core machine delivering a backlog still heartbeats in time.
    "ARMADA_SCHEDULER_EXECUTOR_TIMEOUT": "10",
    "ARMADA_SCHEDULER_HEARTBEAT_RECORD_INTERVAL": "1",
    "ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_RATE": "1000000",
    "ARMADA_SCHEDULING_MAXIMUM_SCHEDULING_BURST": "1000000",
    "ARMADA_SCHEDULING_MAXIMUM_PER_QUEUE_SCHEDULING_RATE": "1000000",
    "ARMADA_SCHEDULING_MAXIMUM_PER_QUEUE_SCHEDULING_BURST": "1000000",
}


#: Executor settings for fault tests: per-run log lines would cost more than the runs, and
#: retries must stay well below the server's (shortened) executor timeout, as the
#: defaults (15 s and 60 s) are, or a recovered server rightly expires a silent executor.
LOAD_EXECUTOR_ENV = {"ARMADA_LOGGING_LEVEL": "warning", "ARMADA_EXECUTOR_RETRY_MAX_SECONDS": "1"}


class Submitter(threading.Thread):
    """Submits ``total`` jobs running ``command`` to ``queue``/``job_set``, retrying each batch."""

    def __init__(
        self, url: str, queue: str, job_set: str, total: int, *, batch: int = 500, command: str
    ) -> None:
        super().__init__(daemon=True)
        self.url, self.queue, self.job_set = url, queue, job_set
        self.total, self.batch, self.command = total, batch, command
        self.acknowledged: dict[str, str] = {}  # client id -> job id
        self.failures: Counter[str] = Counter()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with ArmadaClient(self.url) as client:
                for start in range(0, self.total, self.batch):
                    self._submit(
                        client, [f"job-{n}" for n in range(start, min(start + self.batch, self.total))]
                    )
        except BaseException as exc:  # surfaced by finish()
            self.error = exc

    def _submit(self, client: ArmadaClient, client_ids: list[str]) -> None:
        items = []
        for client_id in client_ids:
            item = job(self.command, cpu="1", memory="16Mi")
            item.client_id = client_id
            items.append(item)
        while True:
            try:
                job_ids = client.submit_jobs(self.queue, self.job_set, items)
            except Exception as exc:  # the server is down or failing: that is the test
                self.failures[type(exc).__name__] += 1
                time.sleep(0.2)
                continue
            self.acknowledged.update(zip(client_ids, job_ids, strict=True))
            return

    def finish(self, timeout: float) -> dict[str, str]:
        self.join(timeout)
        assert not self.is_alive(), "the submitter did not finish"
        assert self.error is None, repr(self.error)
        return self.acknowledged


def job_states(database_url: str) -> dict[str, str]:
    """Every job's state, by job id, straight from the ``jobs`` view."""
    with psycopg.connect(libpq_conninfo(database_url)) as conn:
        return dict(conn.execute("SELECT job_id, state FROM jobs").fetchall())


def event_counts(database_url: str) -> Counter[str]:
    """How many events of each type the log holds."""
    with psycopg.connect(libpq_conninfo(database_url)) as conn:
        return Counter(dict(conn.execute("SELECT type, count(*) FROM events GROUP BY type").fetchall()))


def failure_reasons(database_url: str) -> Counter[str]:
    """Why jobs failed, for assertion messages."""
    with psycopg.connect(libpq_conninfo(database_url)) as conn:
        rows = conn.execute(
            "SELECT coalesce(reason, ''), count(*) FROM jobs WHERE state = 'FAILED' GROUP BY 1"
        )
        return Counter(dict(rows.fetchall()))


def fault_seed() -> int:
    """A random seed for where faults strike; ``ARMADA_FAULT_SEED`` replays a failed run."""
    return int(os.environ.get("ARMADA_FAULT_SEED") or random.randrange(1_000_000))


def duplicated_client_ids(database_url: str) -> list[str]:
    with psycopg.connect(libpq_conninfo(database_url)) as conn:
        rows = conn.execute("SELECT client_id FROM jobs GROUP BY client_id HAVING count(*) > 1").fetchall()
    return [row[0] for row in rows]


def wait_until_all_finished(database_url: str, count: int, *, timeout: float) -> dict[str, str]:
    """Wait until ``count`` jobs exist and none is unfinished; return their states."""

    def finished() -> dict[str, str] | None:
        states = job_states(database_url)
        done = len(states) >= count and all(
            s not in ("QUEUED", "LEASED", "PENDING", "RUNNING") for s in states.values()
        )
        return states if done else None

    return wait_for(finished, timeout=timeout, what=f"{count} jobs to finish")


def admin_check(database_url: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``armada admin check`` on the database (with extra settings in ``env``)."""
    command = armada_command("admin", "check", "--database-url", database_url)
    return subprocess.run(
        command, check=False, env=process_env(env), capture_output=True, text=True, timeout=300
    )


def assert_invariants_hold(database_url: str) -> None:
    """``armada admin check`` on the database: exit 0 and say ok."""
    result = admin_check(database_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("ok ")
