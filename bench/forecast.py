"""Forecast accuracy: replay a mixed workload, forecast as it runs, compare with the actual starts.

    python bench/forecast.py                  # 3 seeds, the default workload (a few minutes)
    python bench/forecast.py --seeds 1 --hours 3 --nodes 20    # a quick look
    python bench/forecast.py --cost-nodes 5000 --cost-queued 100000   # the refresh's cost only

The "cluster" is the scheduling core itself driven in simulated time (a discrete-event
replay, not processes: hours of workload in minutes, and deterministic per seed): jobs
arrive over time in job sets of several queues with different weights, run for their *true*
runtime (a heavy-tailed lognormal per job set, with a spread within the set), some as gangs,
and a burst of preemptible jobs arrives midway. Every ``--forecast-every`` simulated seconds
the forecast engine runs on a copy of the state with *estimated* runtimes, as the server's
refresh does (:mod:`armada.scheduling.runtime_model`, the server's code): its job set's
runtime learned from the set's queue and shape's runs (or the default), the hint where its
job set gave one (true median x noise), the set's finished runs and its running members; the
engine runs the running jobs for their own draws (``--draws`` chooses).
The first ``--warmup`` hours only feed the learned runtimes (a server that has run for a while;
a restarted one starts with none), then every forecast made is compared with the job's
actual start:

* relative error ``|forecast - actual| / (actual - time of forecast)``, median and p90,
  by horizon (``actual - time of forecast``);
* coverage: the share of actual starts inside ``[low, high]``;
* the same error for the naive estimate ``position in queue / the queue's recent start rate``
  (starts in the last ``--rate-window`` seconds), what Kueue users compute by hand;
* the same figures for the forecasts of jobs with and without a hint, and by the forecast's
  basis (that of the runtimes whose ends make room: hint, job set, queue and shape, default,
  re-estimated running jobs), and by queue, to see where the error comes from;
* for the running jobs at each forecast, their median estimate and what the simulation runs
  them for in all over their true runtime, by basis (``running_estimate_ratio``).

Forecasts cannot know jobs that have not arrived yet, and the workload keeps arriving: that
is part of the measured error (``--oracle`` forecasts with the true runtimes, leaving only
it; ``--oracle-arrivals`` simulates the jobs that will in fact arrive, with ``--oracle``
the floor of the error; ``--arrival-window S`` adds the engine's extrapolated arrivals: the
last S seconds of submissions repeated, up to ``--arrival-horizon``; with ``--arrival-model
flow`` instead each queue's work rate over them as a steady flow of jobs of its typical shape,
:mod:`armada.scheduling.flow`, tuned by ``--flow-delay``, ``--flow-skip-backlogged`` and, to
measure the model with a perfect rate, ``--flow-from-future``). Figures are the median of the seeds.
``--ensemble K`` forecasts instead by an (approximately) Bayes-ideal forecaster, the bound on
what any forecaster knowing what a server knows can reach here (:mod:`bench.forecast_ideal`):
the median of K simulations, each with runtimes drawn from their posterior (or true, with
``--oracle``) and arrivals drawn from the workload's own process (``--future``). Each seed
prints its offered load (the cpu-seconds of its jobs outside the burst over the capacity's
over the span: ~1.16 ``--load``, since the rate assumes a set's work; ``--true-load`` does not).
``--cost-*`` times one refresh of a synthetic backlog as the server makes it (the queued
jobs' forecast, then the per-queue probes'), in CPU seconds, and the runtime estimates of its
jobs (``estimates_cpu_seconds``). ``--slurm`` runs the same
workload through a local Slurm instead and scores ``squeue --start`` alike
(:mod:`bench.forecast_slurm`; e.g. ``--slurm --warmup 1 --hours 2``: ~15 minutes a seed).
The last line is JSON.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import statistics
import sys
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.model.resources import ResourceIndex
from armada.scheduling import (
    JobDb,
    JobRequirements,
    NodeDb,
    NodeSpec,
    QueueSpec,
    SchedulerState,
    SchedulingConfig,
    apply_decisions,
    schedule,
)
from armada.scheduling.arrivals import extrapolate
from armada.scheduling.calibration import Calibration
from armada.scheduling.flow import Submitted, steady_flow
from armada.scheduling.forecast import COARSENING, Draws, ForecastSnapshot, forecast, quantile_of
from armada.scheduling.jobdb import QUEUED
from armada.scheduling.probes import forecast_with_probes, typical_jobs
from armada.scheduling.runtime_model import LearnedRuntimes, estimate_runtimes
from armada.scheduling.runtimes import RuntimeEstimate
from bench.forecast_ideal import Ideal, ensemble_point
from bench.forecast_slurm import SlurmRun, run_slurm
from bench.forecast_workload import BURST_SET, GI, Job, burst, job_set, set_rate

QUEUES = [QueueSpec("alpha", 1.0), QueueSpec("beta", 2.0), QueueSpec("gamma", 0.5)]
HORIZONS = [(0, 600, "<10m"), (600, 3600, "10m-1h"), (3600, 6 * 3600, "1h-6h"), (6 * 3600, math.inf, ">6h")]
CONFIG = SchedulingConfig(
    maximum_scheduling_rate=1e9,
    maximum_scheduling_burst=10**9,
    maximum_per_queue_scheduling_rate=1e9,
    maximum_per_queue_scheduling_burst=10**9,
    max_scheduling_duration=0.0,
    usage_half_life=1800.0,
)


@dataclass
class Record:
    made: float
    expected: float | None
    low: float | None
    high: float | None
    naive: float | None
    #: The engine's start before calibration.
    simulated: float | None
    #: The forecast's basis (the runtime basis of the ends that make room for the job).
    basis: str
    #: Whether the job itself carried a runtime hint.
    hinted: bool
    #: The job's queue.
    queue: str = "?"


@dataclass
class Replay:
    """One seed's replay: the cluster, the workload, and every forecast made."""

    args: argparse.Namespace
    seed: int
    nodes: NodeDb = field(init=False)
    db: JobDb = field(init=False)
    jobs: dict[str, Job] = field(default_factory=dict)
    started: dict[str, float] = field(default_factory=dict)
    records: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    learned: LearnedRuntimes = field(init=False)
    starts_by_queue: dict[str, deque[float]] = field(default_factory=lambda: defaultdict(deque))
    forecast_seconds: list[float] = field(default_factory=list)
    submitted: deque[JobRequirements] = field(default_factory=deque)
    calibration: Calibration = field(default_factory=Calibration)
    #: Job -> (time made, simulated start) of its forecasts, until it starts.
    pending: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    #: Running jobs' estimate over true runtime, per basis group ("median", "simulated").
    running_ratios: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    #: The whole workload, (time, jobs) in time order (``--oracle-arrivals`` reads ahead in it).
    future: list[tuple[float, list[Job]]] = field(default_factory=list)
    #: ``--ensemble``: the ideal forecaster, in place of the engine's forecast.
    ideal: Ideal | None = field(init=False)

    def __post_init__(self) -> None:
        self.learned = LearnedRuntimes(self.args.default_runtime)
        self.nodes = NodeDb(ResourceIndex())
        for n in range(self.args.nodes):
            self.nodes.upsert(
                NodeSpec(
                    id=f"n{n}",
                    pool="default",
                    executor="fake",
                    allocatable={"cpu": 16_000, "memory": 64 * GI},
                )
            )
        self.db = JobDb(CONFIG, self.nodes)
        self.ideal = Ideal(self, QUEUES, CONFIG) if self.args.ensemble else None

    @property
    def burst_at(self) -> float:
        """When the preemptible burst arrives: midway through the forecast hours."""
        return float(self.args.warmup + self.args.hours / 2) * 3600

    def workload(self) -> list[tuple[float, list[Job]]]:
        """Job sets arriving over ``--hours``: (time, jobs), in time order."""
        rng = random.Random(self.seed)
        end = (self.args.warmup + self.args.hours) * 3600
        arrivals: list[tuple[float, list[Job]]] = []
        t, number = 0.0, 0
        rate = set_rate(self.args.load, self.args.nodes * 16, true_work=self.args.true_load)
        while t < end:
            t += rng.expovariate(rate)
            number += 1
            arrivals.append((t, job_set(rng, f"s{self.seed}-", number, t)))
        arrivals.append((self.burst_at, burst(rng, f"s{self.seed}-", self.args.nodes * 4, self.burst_at)))
        arrivals.sort(key=lambda a: a[0])
        quantum = self.args.runtime_quantum
        if quantum > 0:  # as Slurm's whole-minute time limits make them (--slurm)
            for _, jobs in arrivals:
                for job in jobs:
                    job.runtime = math.ceil(job.runtime / quantum) * quantum
        return arrivals

    def run(self) -> None:
        self.future = self.workload()
        arrivals = deque(self.future)
        ends: list[tuple[float, str]] = []
        state = SchedulerState()
        t, next_forecast = 0.0, self.args.warmup * 3600 + self.args.forecast_every
        stop = (self.args.warmup + self.args.hours) * 3600 * 3
        while t < stop and (arrivals or ends or self._queued()):
            while arrivals and arrivals[0][0] <= t:
                _, batch = arrivals.popleft()
                for job in batch:
                    self.jobs[job.requirements.id] = job
                    self.submitted.append(job.requirements)
                self.db.add_many(job.requirements for job in batch)
            while ends and ends[0][0] <= t:
                _, job_id = heapq.heappop(ends)
                if job_id in self.db and job_id in self.started:
                    self.db.remove(job_id)
                    self._learn(job_id, t - self.started[job_id])
            if t >= next_forecast:
                self._forecast(t, state)
                next_forecast += self.args.forecast_every
            result = schedule(self.db, queues=QUEUES, config=CONFIG, state=state, now=t, clock=lambda: 0.0)
            state = result.state
            for lease in result.leases:
                job = self.jobs[lease.job_id]
                self.started[lease.job_id] = t
                for made, simulated in self.pending.pop(lease.job_id, ()):
                    self.calibration.observe(simulated - made, t - made, job.requirements.queue)
                self.starts_by_queue[job.requirements.queue].append(t)
                heapq.heappush(ends, (t + job.runtime, lease.job_id))
            apply_decisions(self.db, result)
            following = [next_forecast]
            if arrivals:
                following.append(arrivals[0][0])
            if ends:
                following.append(ends[0][0])
            if len(result.leases):
                following.append(t + 1.0)
            t = max(t + 1.0, min(following))

    def _queued(self) -> bool:
        return any(self.db.queued_counts)

    def _learn(self, job_id: str, seconds: float) -> None:
        job = self.jobs[job_id]
        self.learned.record(job.job_set, _shape(job), seconds)

    def _estimates(self, jobs: list[Job], running: dict[str, list[float]]) -> dict[str, RuntimeEstimate]:
        """Each job's estimate as the server's learner makes them: once per job set, hint and
        shape, all together."""
        ids = [job.requirements.id for job in jobs]
        if self.args.oracle:
            exact = [RuntimeEstimate(job.runtime, job.runtime, job.runtime, "oracle") for job in jobs]
            return dict(zip(ids, exact, strict=True))
        keys: dict[tuple[str, float | None, tuple[object, ...]], int] = {}
        of_job = [keys.setdefault((job.job_set, job.hint, _shape(job)), len(keys)) for job in jobs]
        found = estimate_runtimes(
            [
                self.learned.evidence(
                    hint=hint, job_set=job_set, shape=shape, running=running.get(job_set, ()), deadline=None
                )
                for job_set, hint, shape in keys
            ]
        )
        return dict(zip(ids, map(found.__getitem__, of_job), strict=True))

    def _forecast(self, t: float, state: SchedulerState) -> None:
        if self.ideal is not None:
            self._ensemble(t, state, self.ideal)
            return
        live = [job_id for job_id in self.db.ids if job_id is not None]
        running = {job_id: self.started[job_id] for job_id in live if job_id in self.started}
        elapsed: dict[str, list[float]] = defaultdict(list)
        for job_id, at in running.items():
            elapsed[self.jobs[job_id].job_set].append(t - at)
        estimates = self._estimates([self.jobs[job_id] for job_id in live], elapsed)
        self._diagnose(t, running, estimates)
        window = self.args.arrival_window
        while self.submitted and self.submitted[0].submitted < t - window:
            self.submitted.popleft()
        until = t + self.args.arrival_horizon
        if window > 0:  # the recent jobs' estimates, ended or not: the copies or flow run as long
            recent = [self.jobs[job.id] for job in self.submitted if job.id not in estimates]
            estimates.update(self._estimates(recent, elapsed))
        if self.args.arrival_model == "flow":
            arrivals = self._flow(t, window, until, estimates)
        else:
            arrivals = extrapolate(self.submitted, now=t, window=window, until=until)
        if self.args.oracle_arrivals:  # the jobs that will in fact arrive: the floor of the error
            ahead = [(at, job) for at, jobs in self.future if at > t for job in jobs]
            arrivals = [(at, job.requirements) for at, job in ahead]
            estimates.update(self._estimates([job for _, job in ahead], elapsed))
        snapshot = ForecastSnapshot(
            db=self.db,
            queues=QUEUES,
            config=CONFIG,
            state=state,
            now=t,
            started=running,
            cycle_period=1.0,
            arrivals=arrivals,
            coarsening=self.args.coarsening,
        )
        clock = time.process_time()
        default = RuntimeEstimate(3600, 900, 14400, "default")
        found = forecast(
            snapshot, estimates, default, calibration=self.calibration, draws=Draws(self.args.draws)
        )
        self.forecast_seconds.append(time.process_time() - clock)
        naive = self._naive(t)
        for job_id, f in found.items():
            hinted = self.jobs[job_id].hint is not None
            self.records[job_id].append(
                Record(
                    t,
                    f.expected_start,
                    f.low,
                    f.high,
                    naive.get(job_id),
                    f.simulated,
                    f.basis,
                    hinted,
                    self.jobs[job_id].requirements.queue,
                )
            )
            if f.simulated is not None:
                self.pending[job_id].append((t, f.simulated))

    def _diagnose(self, t: float, running: dict[str, float], estimates: dict[str, RuntimeEstimate]) -> None:
        """For each running job: its median estimate, and what the simulation runs it for in
        all (elapsed + mean or draw left), over its true runtime; by the estimate's basis."""
        for job_id, at in running.items():
            job, estimate, elapsed = self.jobs[job_id], estimates[job_id], t - at
            drawn = self.args.draws != Draws.NONE.value
            left = estimate.draw(quantile_of(job_id), elapsed) if drawn else estimate.mean(elapsed)
            ratios = self.running_ratios[basis_group(estimate.basis)]
            ratios["median"].append(estimate.expected / job.runtime)
            ratios["simulated"].append((elapsed + left) / job.runtime)

    def _flow(
        self, t: float, window: float, until: float, estimates: dict[str, RuntimeEstimate]
    ) -> list[tuple[float, JobRequirements]]:
        """Each queue's steady flow of the last ``window``'s work (:func:`steady_flow`); its
        runtimes go into ``estimates``."""
        if window <= 0:
            return []
        typical = {queue: probe.job for queue, probe in typical_jobs(self.db, t).items()}
        skip = self.args.flow_skip_backlogged
        if skip > 0:  # queues whose oldest queued job has waited longer: their new jobs queue behind
            waited: dict[str, float] = {}
            for job_id in self.db.ids:
                if job_id is not None and job_id not in self.started:
                    req = self.jobs[job_id].requirements
                    waited[req.queue] = max(waited.get(req.queue, 0.0), t - req.submitted)
            typical = {q: job for q, job in typical.items() if waited.get(q, 0.0) <= skip}
        recent = [
            Submitted(req.queue, req.submitted, req.requests, estimates[req.id].mean())
            for req in self.submitted
        ]
        if self.args.flow_from_future:  # the rate of the next ``window``'s true arrivals, as if past
            ahead = [job for at, jobs in self.future if t <= at < t + window for job in jobs]
            found = self._estimates(ahead, {})
            recent = [
                Submitted(
                    job.requirements.queue,
                    job.requirements.submitted - window,
                    job.requirements.requests,
                    found[job.requirements.id].mean(),
                )
                for job in ahead
            ]
        arrivals, runtimes = steady_flow(recent, typical, now=t, window=window, until=until)
        estimates.update(runtimes)
        delay = self.args.flow_delay
        return [(at, job) for at, job in arrivals if at >= t + delay]

    def _ensemble(self, t: float, state: SchedulerState, ideal: Ideal) -> None:
        """``--ensemble``: a point of the ideal forecaster's starts, its range their min and max."""
        clock = time.process_time()
        found = ideal.forecast(t, state)
        self.forecast_seconds.append(time.process_time() - clock)
        for job_id, starts in found.items():
            point = ensemble_point(starts, t, self.args.ensemble_point)
            expected = point if math.isfinite(point) else None
            low, high = (starts[0], starts[-1]) if len(starts) > 1 else (None, None)
            hinted = self.jobs[job_id].hint is not None
            self.records[job_id].append(Record(t, expected, low, high, None, expected, "ensemble", hinted))

    def offered_load(self) -> float:
        """The workload's cpu-seconds outside the burst over the capacity's over its span."""
        span = (self.args.warmup + self.args.hours) * 3600
        work = sum(
            job.runtime * job.requirements.requests["cpu"] / 1000
            for _, jobs in self.future
            for job in jobs
            if job.job_set != BURST_SET
        )
        return float(work / (self.args.nodes * 16 * span))

    def _naive(self, t: float) -> dict[str, float]:
        """Position in the queue over the queue's start rate in the last ``--rate-window``."""
        out: dict[str, float] = {}
        window = self.args.rate_window
        for queue in QUEUES:
            starts = self.starts_by_queue[queue.name]
            while starts and starts[0] < t - window:
                starts.popleft()
            if not starts or not self.db.has_queue(queue.name):
                continue
            rate = len(starts) / window
            rows = self.db.queued_rows(self.db.queue_index(queue.name))
            for position, row in enumerate(rows.tolist(), start=1):
                job_id = self.db.ids[row]
                if job_id is not None and self.db.cols["state"][row] == QUEUED:
                    out[job_id] = t + position / rate
        return out


def _shape(job: Job) -> tuple[object, ...]:
    return (job.requirements.queue, tuple(job.requirements.requests.items()))


#: Breakdown groups beside the horizons: the job's own hint, the forecast's basis.
BASIS_GROUPS = ("room now", "hint", "job set", "queue and shape", "default", "re-estimated")


def basis_group(basis: str) -> str:
    """The :data:`BASIS_GROUPS` entry a forecast's basis falls in (re-estimated first)."""
    return next((g for g in reversed(BASIS_GROUPS) if g in basis), "other")


def errors(replays: Sequence[Replay | SlurmRun]) -> dict[str, dict[str, float | int | None]]:
    """Per horizon bucket (and per hinted or not, per basis group): median/p90 relative
    error, coverage, and the naive median/p90."""
    buckets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for replay in replays:
        for job_id, records in replay.records.items():
            actual = replay.started.get(job_id)
            if actual is None:
                continue
            for r in records:
                lead = max(1.0, actual - r.made)
                # max: Slurm's start stamps are whole seconds, a forecast's time is not.
                label = next(lbl for lo, hi, lbl in HORIZONS if lo <= max(0.0, actual - r.made) < hi)
                hinted = "hinted" if r.hinted else "unhinted"
                for name in (label, "all", hinted, f"basis: {basis_group(r.basis)}", f"queue: {r.queue}"):
                    into = buckets[name]
                    expected = r.expected if r.expected is not None else math.inf
                    into["error"].append(abs(expected - actual) / lead)
                    into["bias"].append((expected - actual) / lead)
                    low = r.low if r.low is not None else math.inf
                    high = r.high if r.high is not None else math.inf
                    into["inside"].append(1.0 if low - 1.0 <= actual <= high + 1.0 else 0.0)
                    if r.naive is not None:
                        into["naive"].append(abs(r.naive - actual) / lead)
                    simulated = r.simulated if r.simulated is not None else math.inf
                    into["simulated"].append(abs(simulated - actual) / lead)
    return {name: _summary(values) for name, values in buckets.items()}


def running_ratios(replays: Sequence[Replay]) -> dict[str, dict[str, float | None]]:
    """Per basis group: the running jobs' median estimate and simulated runtime over their true
    runtime, the median over each seed's forecasts, then over the seeds."""
    out = {}
    for group in BASIS_GROUPS:
        seeds = [replay.running_ratios[group] for replay in replays if group in replay.running_ratios]
        if seeds:
            out[group] = {
                kind: _median([statistics.median(seed[kind]) for seed in seeds])
                for kind in ("median", "simulated")
            }
    return out


def _summary(values: dict[str, list[float]]) -> dict[str, float | int | None]:
    def q(xs: list[float], p: float) -> float | None:
        if not xs:
            return None
        ordered = sorted(xs)
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 3)

    inside = values["inside"]
    return {
        "forecasts": len(values["error"]),
        "median": q(values["error"], 0.5),
        "p90": q(values["error"], 0.9),
        #: signed median: < 0 when forecasts are early
        "bias": q(values["bias"], 0.5),
        "coverage": round(sum(inside) / len(inside), 3) if inside else None,
        "naive_median": q(values["naive"], 0.5),
        "naive_p90": q(values["naive"], 0.9),
        #: the engine's start before calibration
        "simulated_median": q(values["simulated"], 0.5),
    }


def cost_snapshot(nodes: int, queued: int) -> tuple[ForecastSnapshot, dict[str, RuntimeEstimate]]:
    """A synthetic backlog: ``queued`` jobs of 10 queues on ``nodes`` 32-cpu nodes, half of
    them busy with jobs that have run up to two hours; the snapshot and every job's runtime
    estimate."""
    rng = random.Random(0)
    config = CONFIG
    node_db = NodeDb(ResourceIndex())
    for n in range(nodes):
        node_db.upsert(
            NodeSpec(
                id=f"n{n}", pool="default", executor="fake", allocatable={"cpu": 32_000, "memory": 256 * GI}
            )
        )
    db = JobDb(config, node_db)
    queues = [QueueSpec(f"q{i}", 1.0 + i % 3) for i in range(10)]
    db.add_many(
        JobRequirements(id=f"r{i}", queue=f"q{i % 10}", requests={"cpu": 4000, "memory": 8 * GI})
        for i in range(nodes * 4)
    )
    apply_decisions(db, schedule(db, queues=queues, config=config, state=SchedulerState(), now=0.0))
    db.add_many(
        JobRequirements(
            id=f"j{i}",
            queue=f"q{i % 10}",
            requests={"cpu": (1, 2, 4)[i % 3] * 1000, "memory": 4 * GI},
            submitted=i - queued,  # before now: a probe submitted now queues behind them all
        )
        for i in range(queued)
    )
    estimates = {}
    for i in range(nodes * 4):
        e = rng.uniform(60, 7200)
        estimates[f"r{i}"] = RuntimeEstimate(e, e / 2, e * 2, "learned")
    for i in range(queued):
        e = (300, 1800, 3600)[i % 3]
        estimates[f"j{i}"] = RuntimeEstimate(e, e / 2, e * 2, "hint")
    # The running jobs started over the last two hours, as a server's have (their time left is
    # conditioned on it).
    started = {f"r{i}": -rng.uniform(0, 7200) for i in range(nodes * 4)}
    snapshot = ForecastSnapshot(
        db=db, queues=queues, config=config, state=SchedulerState(), now=0.0, started=started
    )
    return snapshot, estimates


def cost(nodes: int, queued: int, draws: Draws) -> float:
    """CPU seconds of one refresh of :func:`cost_snapshot`'s backlog, as the server makes it."""
    snapshot, estimates = cost_snapshot(nodes, queued)
    default = RuntimeEstimate(3600, 900, 14400, "default")
    clock = time.process_time()
    forecast_with_probes(snapshot, estimates, default, draws=draws)  # the jobs' and the probes'
    return time.process_time() - clock


def estimates_cost(nodes: int, queued: int) -> tuple[float, int]:
    """CPU seconds of the estimates of :func:`cost_snapshot`'s jobs as the server's learner
    makes them (once per job set and shape), and the number of those: queued jobs in job sets
    of 10 of one shape, running jobs (4 a node) in sets of 4 that have run up to 2 hours, each running set
    with 0-3 finished runs, 64 runs of every queue and shape."""
    rng = random.Random(0)
    learned = LearnedRuntimes(3600.0)
    shapes = [(f"q{q}", cpu) for q in range(10) for cpu in (1000, 2000, 4000)]
    for shape in shapes:
        for _ in range(64):
            learned.record(("finished", shape), shape, rng.lognormvariate(math.log(900), 1.0))
    jobs: list[tuple[tuple[str, str], tuple[str, int]]] = []
    running: dict[tuple[str, str], list[float]] = defaultdict(list)
    for i in range(nodes * 4):
        job_set, shape = (f"q{i % 10}", f"run{i // 40}"), (f"q{i % 10}", 4000)
        jobs.append((job_set, shape))
        running[job_set].append(rng.uniform(0, 7200))
    for job_set in running:
        for _ in range(rng.randint(0, 3)):
            learned.record(job_set, None, rng.lognormvariate(math.log(900), 1.0))
    jobs += [
        ((f"q{i % 10}", f"set{i // 100}"), (f"q{i % 10}", (1, 2, 4)[i // 100 % 3] * 1000))
        for i in range(queued)
    ]
    clock = time.process_time()
    keys: dict[tuple[tuple[str, str], tuple[str, int]], int] = {}
    of_job = [keys.setdefault(key, len(keys)) for key in jobs]
    found = estimate_runtimes(
        [
            learned.evidence(
                hint=None, job_set=job_set, shape=shape, running=running.get(job_set, ()), deadline=None
            )
            for job_set, shape in keys
        ]
    )
    dict(zip(range(len(jobs)), map(found.__getitem__, of_job), strict=True))  # the server's per-job map
    return time.process_time() - clock, len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=1, help="seeds first-seed, first-seed + 1, ...")
    parser.add_argument("--hours", type=float, default=6.0, help="simulated hours of arrivals, forecast")
    parser.add_argument(
        "--warmup",
        type=float,
        default=6.0,
        help="simulated hours of arrivals before: runtimes learned, no forecasts",
    )
    parser.add_argument("--nodes", type=int, default=20, help="16-cpu nodes")
    parser.add_argument("--load", type=float, default=0.95, help="offered load / capacity")
    parser.add_argument(
        "--true-load",
        action="store_true",
        help="set the arrival rate by a job set's true mean work (by default ~1.16 times --load)",
    )
    parser.add_argument(
        "--forecast-every", type=float, default=600.0, help="simulated seconds between forecasts"
    )
    parser.add_argument("--rate-window", type=float, default=1800.0)
    parser.add_argument("--default-runtime", type=float, default=3600.0)
    parser.add_argument("--cost-nodes", type=int, default=5000)
    parser.add_argument("--cost-queued", type=int, default=100_000)
    parser.add_argument(
        "--arrival-window",
        type=float,
        default=0.0,
        help="extrapolate this many seconds of arrivals (0: none)",
    )
    parser.add_argument("--arrival-horizon", type=float, default=6 * 3600.0, help="... this far ahead")
    parser.add_argument(
        "--arrival-model",
        choices=("repeat", "flow"),
        default="repeat",
        help="repeat: the window's jobs again; flow: each queue's work rate over the window, "
        "as evenly spaced jobs of its typical shape",
    )
    parser.add_argument(
        "--flow-skip-backlogged",
        type=float,
        default=0.0,
        help="flow: none for queues whose oldest queued job waited longer than this (0: all queues)",
    )
    parser.add_argument("--flow-delay", type=float, default=0.0, help="flow: none in the first seconds")
    parser.add_argument(
        "--flow-from-future", action="store_true", help="flow: the rate of the true arrivals ahead"
    )
    parser.add_argument(
        "--coarsening", type=float, default=COARSENING, help="the engine's step, share of time simulated"
    )
    parser.add_argument(
        "--draws",
        choices=[d.value for d in Draws],
        default=Draws.RUNNING.value,
        help="which jobs the engine runs for their own draw (a quantile fixed by its id), not their"
        " mean (the engine's default: running)",
    )
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument(
        "--slurm",
        action="store_true",
        help="run the workload through Slurm instead (slurm_peer.sh) and score squeue --start",
    )
    parser.add_argument("--slurm-scale", type=float, default=20.0, help="simulated seconds per real second")
    parser.add_argument(
        "--runtime-quantum",
        type=float,
        default=0.0,
        help="round every runtime up to a multiple of this (60 x --slurm-scale: Slurm's workload)",
    )
    parser.add_argument(
        "--slurm-tail", type=float, default=3.0, help="stop Slurm at this multiple of warm-up + hours"
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="forecast with the true runtimes: the error unseen arrivals leave",
    )
    parser.add_argument(
        "--oracle-arrivals",
        action="store_true",
        help="simulate the jobs that will arrive (with --oracle: the error's floor)",
    )
    parser.add_argument(
        "--ensemble",
        type=int,
        default=0,
        metavar="K",
        help="forecast by the ideal forecaster instead (bench/forecast_ideal.py): median of K simulations",
    )
    parser.add_argument(
        "--future",
        choices=("generator", "true", "none"),
        default="generator",
        help="--ensemble's arrivals: drawn from the workload's process, the true ones, or none",
    )
    parser.add_argument(
        "--future-burst", action="store_true", help="--future generator: the burst is known (if to come)"
    )
    parser.add_argument(
        "--ensemble-point",
        choices=("median", "weighted", "within"),
        default="median",
        help="--ensemble's forecast: the median start, weighted by 1 / lead, or the likeliest within 0.2",
    )
    parser.add_argument(
        "--ensemble-horizon", type=float, default=12 * 3600.0, help="--ensemble's simulated seconds"
    )
    args = parser.parse_args()

    summary: dict[str, object] = {"bench": "forecast"}
    if not args.skip_accuracy:
        per_seed = []
        replays = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            replayed = Replay(args, seed)
            replay: Replay | SlurmRun = replayed
            if args.slurm:
                replay = run_slurm(args, seed, replayed.workload())
                counts = {k: getattr(replay, k) for k in ("submitted", "estimated", "unestimated")}
                print(f"seed {seed}: slurm {json.dumps(counts)}", flush=True)
            else:
                replayed.run()
            replays.append(replay)
            figures = errors([replay])
            if args.ensemble == 1:  # one draw has no range
                for bucket in figures.values():
                    bucket["coverage"] = None
            per_seed.append(figures)
            print(f"seed {seed}: {json.dumps(figures['all'])}", flush=True)
            if isinstance(replay, Replay):
                print(
                    f"  forecast cpu s: median {statistics.median(replay.forecast_seconds):.3f},"
                    f" offered load {replay.offered_load():.3f}",
                    flush=True,
                )
        by_horizon = {}
        groups = ["hinted", "unhinted", *(f"basis: {g}" for g in (*BASIS_GROUPS, "other"))]
        groups += [f"queue: {queue.name}" for queue in QUEUES]
        for name in [*(label for *_, label in HORIZONS), "all", *groups]:
            if not all(name in seed for seed in per_seed):
                continue
            by_horizon[name] = {
                key: _median([seed[name][key] for seed in per_seed])
                for key in (
                    "forecasts",
                    "median",
                    "p90",
                    "bias",
                    "coverage",
                    "naive_median",
                    "naive_p90",
                    "simulated_median",
                )
            }
            print(f"{name:>7}: {json.dumps(by_horizon[name])}", flush=True)
        summary["by_horizon"] = by_horizon
        summary["median_relative_error"] = by_horizon["all"]["median"]
        summary["naive_median_relative_error"] = by_horizon["all"]["naive_median"]
        summary["coverage"] = by_horizon["all"]["coverage"]
        ratios = running_ratios([replay for replay in replays if isinstance(replay, Replay)])
        print(f"running jobs' estimate / true runtime: {json.dumps(ratios)}", flush=True)
        summary["running_estimate_ratio"] = ratios
    if args.cost_nodes and args.cost_queued:
        seconds = cost(args.cost_nodes, args.cost_queued, Draws(args.draws))
        print(f"refresh of {args.cost_queued} queued jobs on {args.cost_nodes} nodes: {seconds:.2f} s CPU")
        summary["refresh_cpu_seconds"] = round(seconds, 3)
        seconds, sets = estimates_cost(args.cost_nodes, args.cost_queued)
        print(f"  their runtime estimates ({sets} job sets and shapes): {seconds:.2f} s CPU")
        summary["estimates_cpu_seconds"] = round(seconds, 3)
        summary["refresh_shape"] = {"nodes": args.cost_nodes, "queued": args.cost_queued}
    print(json.dumps(summary))


def _median(values: list[float | int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


if __name__ == "__main__":
    main()
