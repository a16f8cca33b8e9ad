"""What-if replay (``armada simulate``): fidelity on recorded logs, and speed on a big synthetic one.

    python bench/simulate.py fidelity --scenario fairness --runs 3
    python bench/simulate.py fidelity --scenario throughput --runs 3
    python bench/simulate.py speed --jobs 100000 --nodes 1000 --hours 24

``fidelity`` records a workload in a real log (server, fake-cluster executors, jobs submitted
over HTTP at their times: ``tests/e2e/recording.py``), then replays the log with the settings
it was recorded under and compares, per queue, the replayed mean wait with the recorded one
(relative error) and the pools' CPU utilisation (absolute difference, in points). Goals: wait
within 15%, utilisation within 5 points. With ``--logs DIR`` each recording is kept there
(``<scenario>-<seed>.db`` and its window in ``.json``) and replayed again by later runs
instead of recorded anew: before/after figures of a replay change on the same logs.

``speed`` writes a synthetic log straight into a SQLite events table (queues, executors'
node reports, and per job ``submitted``, ``leased`` and ``succeeded``: Poisson arrivals over
``--hours``, lognormal runtimes, 10 queues of weights 1-4, nodes of 8 cores and 32 GiB, jobs of
1-4 cores) and times ``compare()``: reading the window and one replay with the default
settings. Each figure is the median of ``--runs``. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec
from sqlalchemy import insert

from armada.eventstore import schema
from armada.eventstore.database import Database
from armada.model import events as ev
from armada.model.ids import new_job_id, new_run_id
from armada.model.queues import Queue
from armada.scheduling import SchedulingConfig
from armada.services.simulation.whatif import Comparison, compare
from bench.common import report, rss_mb
from tests.e2e.cluster import FAST_SERVER_ENV
from tests.e2e.recording import fairness, record, throughput
from tests.factories import make_job

#: The recording server's scheduling settings (``FAST_SERVER_ENV``), as the replay must use them.
RECORDED_SETTINGS = {"maximumSchedulingRate": 10000.0, "maximumPerQueueSchedulingRate": 10000.0}
RECORDED_CYCLE_PERIOD = float(FAST_SERVER_ENV["ARMADA_SCHEDULER_CYCLE_PERIOD"])


async def _compare(
    url: str,
    since: float,
    until: float,
    config: SchedulingConfig,
    period: float,
    *,
    recorded_cycles: bool = True,
) -> Comparison:
    database = await Database(url).open(listen=False)
    try:
        return await compare(database.engine, since, until, config, period, recorded_cycles=recorded_cycles)
    finally:
        await database.close()


def _recorded(scenario: str, seed: int, logs: Path | None, tmp: Path) -> tuple[str, float, float]:
    """A recording of ``scenario``: its database URL and window; kept in (or reused from) ``logs``."""
    where = logs if logs is not None else tmp
    database, window = where / f"{scenario}-{seed}.db", where / f"{scenario}-{seed}.json"
    url = f"sqlite:///{database}"
    if logs is not None and window.exists():
        since, until = json.loads(window.read_text())
        return url, since, until
    where.mkdir(parents=True, exist_ok=True)
    workload = fairness(seed=seed) if scenario == "fairness" else throughput(seed=seed)
    since, until = record(tmp, url, workload)
    window.write_text(json.dumps([since, until]))
    return url, since, until


def fidelity(args: argparse.Namespace) -> dict[str, Any]:
    config = msgspec.convert(RECORDED_SETTINGS, SchedulingConfig)
    wait_errors: list[float] = []
    util_errors: list[float] = []
    per_run = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-simulate-") as tmp:
            url, since, until = _recorded(args.scenario, run + 1, args.logs, Path(tmp))
            comparison = asyncio.run(_compare(url, since, until, config, RECORDED_CYCLE_PERIOD))
        recorded, current = comparison.scenarios[0].figures, comparison.scenarios[1].figures
        waits = {
            q: (
                current.queues[q].mean_wait,
                f.mean_wait,
                abs(current.queues[q].mean_wait - f.mean_wait) / f.mean_wait,
            )
            for q, f in recorded.queues.items()
            if f.mean_wait > 0
        }
        util = {
            p: (current.pools[p].utilisation.get("cpu", 0.0), f.utilisation.get("cpu", 0.0))
            for p, f in recorded.pools.items()
        }
        worst_wait = max(e for _, _, e in waits.values())
        worst_util = max(abs(a - b) for a, b in util.values())
        wait_errors.append(worst_wait)
        util_errors.append(worst_util)
        per_run.append(
            {
                "jobs": comparison.jobs,
                "meanWait": {
                    q: {"replayed": round(a, 2), "recorded": round(b, 2)} for q, (a, b, _) in waits.items()
                },
                "cpuUtilisation": {
                    p: {"replayed": round(a, 4), "recorded": round(b, 4)} for p, (a, b) in util.items()
                },
                "worstWaitError": round(worst_wait, 3),
                "worstUtilisationError": round(worst_util, 4),
            }
        )
        print(per_run[-1], flush=True)
    return {
        "benchmark": "simulate-fidelity",
        "scenario": args.scenario,
        "runs": args.runs,
        "worstQueueMeanWaitRelativeError": {"median": round(statistics.median(wait_errors), 3)},
        "cpuUtilisationError": {"median": round(statistics.median(util_errors), 4)},
        "perRun": per_run,
    }


def write_synthetic(url: str, jobs: int, nodes: int, hours: float, seed: int) -> tuple[float, float]:
    """A synthetic day straight into the events table; the window ``(since, until)``."""
    rng = random.Random(seed)
    since = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    until = since + hours * 3600
    queues = {f"q{i}": float(1 + i % 4) for i in range(10)}
    rows: list[dict[str, Any]] = []
    seq = 0

    def add(event: ev.Event, t: float) -> None:
        nonlocal seq
        seq += 1
        created = datetime.fromtimestamp(t, UTC)
        event = msgspec.structs.replace(event, created=created)
        rows.append(
            {
                "seq": seq,
                "created": created,
                "queue": event.queue,
                "job_set_id": event.job_set_id,
                "job_id": event.job_id,
                "run_id": event.run_id,
                "type": event.__struct_config__.tag,
                "payload": ev.encode_event(event),
            }
        )

    for name, weight in queues.items():
        add(ev.QueueCreated(queue=name, spec=Queue(name=name, priority_factor=weight)), since)
    per_executor = 1000
    for e in range(math.ceil(nodes / per_executor)):
        count = min(per_executor, nodes - e * per_executor)
        node_list = [
            ev.ExecutorNode(name=f"n{i}", allocatable={"cpu": 8000, "memory": 32 * 2**30, "pods": 110})
            for i in range(count)
        ]
        add(ev.ExecutorReported(executor_id=f"c{e}", nodes=node_list), since)
    # Load about 80%: mean runtime so that jobs x mean cores x mean runtime ~ 0.8 x capacity.
    mean_cores = 2.5
    mean_runtime = 0.8 * nodes * 8 * hours * 3600 / (jobs * mean_cores)
    sigma = 1.0
    median = mean_runtime / math.exp(sigma * sigma / 2)
    t = since
    timeline: list[tuple[float, int, ev.Event]] = []
    for i in range(jobs):
        t += rng.expovariate(jobs / (hours * 3600))
        queue = f"q{rng.randrange(10)}"
        job = make_job(
            job_id=new_job_id(),
            queue=queue,
            job_set_id=f"set-{i % 500}",
            cpu=str(rng.choice((1, 2, 3, 4))),
            memory="2Gi",
        )
        envelope: dict[str, Any] = {"queue": queue, "job_set_id": job.job_set_id, "job_id": job.id}
        timeline.append((t, 0, ev.JobSubmitted(job=job, **envelope)))
        run = new_run_id()
        start = t + rng.expovariate(1 / 60)
        timeline.append((start, 1, ev.JobLeased(cluster_id="c0", node_id="n0", run_id=run, **envelope)))
        end = start + rng.lognormvariate(math.log(median), sigma)
        timeline.append((end, 2, ev.JobSucceeded(run_id=run, **envelope)))
    timeline.sort(key=lambda item: (item[0], item[1]))
    for when, _, event in timeline:
        add(event, when)

    async def write() -> None:
        database = await Database(url).open(listen=False)
        try:
            async with database.engine.begin() as conn:
                for chunk in range(0, len(rows), 20_000):
                    await conn.execute(insert(schema.events), rows[chunk : chunk + 20_000])
        finally:
            await database.close()

    asyncio.run(write())
    return since, until


def speed(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-simulate-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'armada.db'}"
        started = time.perf_counter()
        since, until = write_synthetic(url, args.jobs, args.nodes, args.hours, args.seed)
        written = time.perf_counter() - started
        print(f"synthetic log written in {written:.0f}s", flush=True)
        results = []
        for _ in range(args.runs):
            started, cpu = time.perf_counter(), time.process_time()
            comparison = asyncio.run(
                _compare(url, since, until, SchedulingConfig(), args.cycle_period, recorded_cycles=False)
            )
            total, cpu = time.perf_counter() - started, time.process_time() - cpu
            current = comparison.scenarios[1]
            results.append((total, comparison.read_seconds, current.seconds, current.cycles, cpu))
            print(
                {
                    "total": round(total, 1),
                    "read": round(comparison.read_seconds, 1),
                    "replay": round(current.seconds, 1),
                    "cycles": current.cycles,
                },
                flush=True,
            )
    queues = comparison.scenarios[1].figures.queues.values()
    waits = sum(q.mean_wait * q.jobs for q in queues) / max(1, sum(q.jobs for q in queues))
    return {
        "benchmark": "simulate-speed",
        "jobs": args.jobs,
        "nodes": args.nodes,
        "hours": args.hours,
        "cyclePeriod": args.cycle_period,
        "runs": args.runs,
        "seconds": {"median": round(statistics.median(r[0] for r in results), 1)},
        "cpuSeconds": {"median": round(statistics.median(r[4] for r in results), 1)},
        "readSeconds": {"median": round(statistics.median(r[1] for r in results), 1)},
        "replaySeconds": {"median": round(statistics.median(r[2] for r in results), 1)},
        "cycles": results[0][3],
        # To compare steps: the replay's mean wait over all jobs and its CPU utilisation.
        "meanWait": round(waits, 1),
        "cpuUtilisation": round(comparison.scenarios[1].figures.pools["default"].utilisation["cpu"], 4),
        "rssMb": round(rss_mb()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    fid = sub.add_parser("fidelity")
    fid.add_argument("--scenario", choices=("fairness", "throughput"), default="fairness")
    fid.add_argument("--runs", type=int, default=3)
    fid.add_argument("--logs", type=Path, help="keep the recordings here, and replay those kept")
    spd = sub.add_parser("speed")
    spd.add_argument("--jobs", type=int, default=100_000)
    spd.add_argument("--nodes", type=int, default=1000)
    spd.add_argument("--hours", type=float, default=24.0)
    spd.add_argument("--cycle-period", type=float, default=1.0)
    spd.add_argument("--runs", type=int, default=3)
    spd.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    report(fidelity(args) if args.mode == "fidelity" else speed(args))


if __name__ == "__main__":
    main()
