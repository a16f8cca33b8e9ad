"""Benchmark one scheduling cycle on a synthetic cluster.

Builds nodes and a job database (not timed as the cycle), runs one full cycle and prints a
human summary followed, as the last line, by a JSON object with ``cycle_seconds``,
``scheduled``, ``preempted`` and ``rss_mb``. Rate limits are configured off so that the
cycle is bounded by capacity, not by the (upstream default 100/s) token buckets.
``--pools N --clusters M`` builds a fleet: node ``i`` is in pool ``pool-(i % N)`` (each pool
with its own policy entry) of cluster ``cluster-(i % M)``, so every pool spans clusters.
``--away`` turns away scheduling on: pool ``i`` borrows from pool ``i+1``, the jobs of queue
``q`` belong to pool ``q % N`` and are of a preemptible class with away node types.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
from pyinstrument import Profiler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.model.quantities import to_units
from armada.model.resources import ResourceIndex
from armada.scheduling import JobDb, JobRequirements, NodeDb, NodeSpec, QueueSpec, SchedulerState, schedule
from armada.scheduling.config import AwayNodeType, PriorityClass, SchedulingConfig, WellKnownNodeType
from armada.scheduling.pool_config import PoolConfig


def build(args: argparse.Namespace) -> tuple[JobDb, list[QueueSpec], SchedulingConfig]:
    classes = dict(SchedulingConfig().priority_classes)
    if args.away:
        classes[AWAY_CLASS] = PriorityClass(
            priority=1000, preemptible=True, away_node_types=[AwayNodeType(900, "any")]
        )
    config = SchedulingConfig(
        priority_classes=classes,
        well_known_node_types=[WellKnownNodeType("any")] if args.away else [],
        maximum_scheduling_rate=1e12,
        maximum_scheduling_burst=10**12,
        maximum_per_queue_scheduling_rate=1e12,
        maximum_per_queue_scheduling_burst=10**12,
        max_scheduling_duration=args.budget,
        pools=[
            PoolConfig(
                name=_pool(p, args),
                protected_fraction_of_fair_share=1.0,
                away_pools=[_pool((p + 1) % args.pools, args)] if args.away and args.pools > 1 else [],
            )
            for p in range(args.pools)
        ],
    )
    nodes = NodeDb(ResourceIndex())
    node_cpu, node_mem = to_units("cpu", args.node_cpu), to_units("memory", args.node_memory)
    for i in range(args.nodes):
        nodes.upsert(
            NodeSpec(
                id=f"node-{i:06d}",
                pool=_pool(i % args.pools, args),
                executor=f"cluster-{i % args.clusters}",
                labels={"kubernetes.io/hostname": f"node-{i:06d}", "rack": f"rack-{i // 40}"},
                allocatable={"cpu": node_cpu, "memory": node_mem},
            )
        )
    db = JobDb(config, nodes)
    queues = [QueueSpec(f"queue-{q:03d}") for q in range(args.queues)] + [QueueSpec("burst")] * args.burst
    requests = {"cpu": to_units("cpu", args.job_cpu), "memory": to_units("memory", args.job_memory)}
    rng = np.random.default_rng(1)
    if args.running_fraction > 0:
        _fill(db, args, requests, node_cpu, node_mem)
    per_queue = args.jobs // args.queues
    jobs: list[JobRequirements] = []
    for q, spec in enumerate(queues):
        gang_jobs = int(per_queue * args.gang_fraction) // args.gang_size * args.gang_size
        is_gang = np.zeros(per_queue - gang_jobs + gang_jobs // args.gang_size, dtype=bool)
        is_gang[rng.choice(len(is_gang), gang_jobs // args.gang_size, replace=False)] = True
        n = 0
        for unit, gang in enumerate(is_gang.tolist()):
            for _ in range(args.gang_size if gang else 1):
                jobs.append(
                    JobRequirements(
                        id=f"job-{q}-{n}",
                        queue=spec.name,
                        requests=requests,
                        submitted=float(n),
                        priority_class_name=AWAY_CLASS if args.away else args.priority_class,
                        pools=(_pool(q % args.pools, args),) if args.away else (),
                        gang_id=f"gang-{q}-{unit}" if gang else "",
                        gang_cardinality=args.gang_size if gang else 1,
                    )
                )
                n += 1
    db.add_many(jobs)
    return db, queues, config


AWAY_CLASS = "preemptible-away"


def _pool(index: int, args: argparse.Namespace) -> str:
    return f"pool-{index}" if args.pools > 1 else "default"


def _fill(db: JobDb, args: argparse.Namespace, requests: dict[str, int], cpu: int, mem: int) -> None:
    """Running jobs filling ``running_fraction`` of every node: spread evenly over the queues,
    or all from one extra queue that burst into an idle cluster (``--burst``)."""
    per_node = min(cpu // requests["cpu"], mem // requests["memory"])
    running = int(per_node * args.running_fraction)
    total = running * args.nodes
    queue_of = ["burst"] * total if args.burst else [f"queue-{k % args.queues:03d}" for k in range(total)]
    pc = args.priority_class
    db.add_many(
        JobRequirements(id=f"run-{k}", queue=queue_of[k], requests=requests, priority_class_name=pc)
        for k in range(total)
    )
    for k in range(total):
        node = k // running
        db.lease(f"run-{k}", f"node-{node:06d}", _pool(node % args.pools, args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--node-cpu", required=True)
    parser.add_argument("--node-memory", required=True)
    parser.add_argument("--queues", type=int, required=True)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--job-cpu", required=True)
    parser.add_argument("--job-memory", required=True)
    parser.add_argument("--gang-fraction", type=float, default=0.0)
    parser.add_argument("--gang-size", type=int, default=4)
    parser.add_argument("--running-fraction", type=float, default=0.0)
    parser.add_argument("--priority-class", default="", help="of all jobs, e.g. armada-preemptible")
    parser.add_argument("--burst", action="store_true", help="running jobs all belong to one other queue")
    parser.add_argument("--pools", type=int, default=1, help="pools the nodes are spread over")
    parser.add_argument("--away", action="store_true", help="pool i borrows from pool i+1 (see above)")
    parser.add_argument(
        "--clusters", type=int, default=4, help="clusters (executors) the nodes are spread over"
    )
    parser.add_argument("--budget", type=float, default=30.0, help="maxSchedulingDuration (s)")
    parser.add_argument(
        "--max-leases", type=int, default=None, help="the cycle's lease cap (the service's, e.g. 10000)"
    )
    parser.add_argument("--profile", action="store_true", help="print a pyinstrument profile of the cycle")
    args = parser.parse_args()

    started = time.perf_counter()
    db, queues, config = build(args)
    for q in range(len(db.queue_names)):  # steady state: queue orders are already sorted,
        db.queued_rows(q)
    db.nodes.pool_rows()  # and the pool index is built (it changes only when nodes come or go)
    build_seconds = time.perf_counter() - started

    profiler = None
    if args.profile:
        profiler = Profiler()
        profiler.start()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = schedule(
        db,
        queues=queues,
        config=config,
        state=SchedulerState(),
        now=0.0,
        clock=time.perf_counter,
        max_leases=args.max_leases,
    )
    cycle_seconds = time.perf_counter() - started
    cycle_cpu_seconds = time.process_time() - cpu_started
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"built {len(db)} jobs on {args.nodes} nodes in {build_seconds:.1f}s; stats {result.stats}")
    print(
        json.dumps(
            {
                "cycle_seconds": round(cycle_seconds, 4),
                "cycle_cpu_seconds": round(cycle_cpu_seconds, 4),
                "scheduled": result.stats.scheduled,
                "preempted": result.stats.preempted,
                "considered": result.stats.considered,
                "rss_mb": round(rss_mb, 1),
                "build_seconds": round(build_seconds, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
