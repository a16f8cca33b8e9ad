"""Replay a recorded workload through the real scheduling core under some settings.

The replay starts from an empty cluster at the window's start and runs the loop every
simulation shares (:func:`armada.scheduling.replay.run_forward`): jobs arrive when they were
submitted, executors offer the nodes they reported, cancellations happen when they did, and
each job, once the core places it, holds its node for its recorded runtime. The core
decides everything else (order, placement, preemption) with the settings given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from armada.model.resources import ResourceIndex
from armada.scheduling import JobDb, NodeDb, QueueSpec, SchedulingConfig
from armada.scheduling.decisions import SchedulingResult
from armada.scheduling.replay import Forward, IntArray, QueueChange, run_forward
from armada.scheduling.state import SchedulerState
from armada.services.simulation.cycles import CycleTiming
from armada.services.simulation.recorded import Outcome, RecordedLog, Run


@dataclass
class Replayed:
    """The replay's outcome per job, and the core's own view of fair share."""

    outcomes: dict[str, Outcome]
    #: pool -> queue -> time-weighted mean of the core's demand-adjusted fair share.
    fair_share: dict[str, dict[str, float]]
    cycles: int


def replay(
    recorded: RecordedLog,
    config: SchedulingConfig,
    cycle_period: float,
    *,
    queue_settings: Callable[[QueueSpec], QueueSpec] | None = None,
    recorded_cycles: bool = True,
) -> Replayed:
    """Replay ``recorded`` with ``config``, each queue's settings as the log set them over
    time or as ``queue_settings`` changes them. With ``recorded_cycles``, cycles run
    when the live ones decided (or as things change, if none followed within ``cycle_period``)
    and their leases take effect when the live ones' were recorded; without, cycles are
    ``cycle_period`` s apart at least (coarser and faster, for long windows)."""
    db = JobDb(config, NodeDb(ResourceIndex()))
    runtimes = recorded.runtimes
    cycles = recorded.cycles if recorded_cycles else CycleTiming()
    queues, timeline = list(recorded.queues.values()), recorded.timeline
    if queue_settings is not None:
        queues = [queue_settings(queue) for queue in queues]
        timeline = [
            (t, QueueChange(queue_settings(item.queue)) if isinstance(item, QueueChange) else item)
            for t, item in timeline
        ]
    forward = Forward(
        db=db,
        queues=queues,
        config=config,
        state=SchedulerState(),
        runtime=lambda job_ids: ([runtimes[job_id] for job_id in job_ids], [""] * len(job_ids)),
        timeline=timeline,
        failures=recorded.failures,
        cycle_period=cycle_period,
        cycle_instants=cycles.decided,
        lease_latency=recorded.decision_latency if recorded_cycles else 0.0,
        cycle_latencies=cycles.latencies,
        cycle_stalled=cycles.possible,
    )
    watcher = _Watcher(recorded, forward.latency)
    count = run_forward(forward, recorded.since, recorded.until, watcher)
    return Replayed(watcher.outcomes, watcher.mean_fair_share(recorded.until), count)


@dataclass
class _Watcher:
    """Records each job's runs as the core decides them (an :class:`Observer`)."""

    recorded: RecordedLog
    #: Seconds from a cycle's decision at ``t`` to its leases being recorded: when replayed runs start.
    latency: Callable[[float], float]
    outcomes: dict[str, Outcome] = field(init=False)
    _share_seconds: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    _last: tuple[float, dict[str, dict[str, float]]] | None = None
    #: Whether the last cycle left some job waiting, and for how long cycles did.
    _contested: bool = False
    _contested_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.outcomes = {
            job_id: Outcome(queue=o.queue, submitted=o.submitted, requests=o.requests)
            for job_id, o in self.recorded.outcomes.items()
        }

    def cycle(self, t: float, result: SchedulingResult, db: JobDb) -> None:
        self._weigh(t)
        self._contested = bool(result.queue_summary)
        self._last = (
            t,
            {
                pool: {q: s.adjusted_fair_share for q, s in by_queue.items()}
                for pool, by_queue in result.shares.items()
            },
        )
        outcomes = self.outcomes
        start = t + self.latency(t)
        for job_id, pool in zip(result.leases.job_ids, result.leases.pools, strict=True):
            outcomes[job_id].runs.append(Run(pool=pool, start=start))
        for preemption in result.preemptions:
            outcome = outcomes[preemption.job_id]
            outcome.preempted = True
            self._end(outcome, t, lost=True)

    def ended(self, t: float, rows: IntArray, bases: Sequence[str], db: JobDb) -> None:
        for job_id in db.ids_of(rows):
            self._end(self.outcomes[job_id], t, lost=False)

    def left(self, t: float, job_id: str, running: bool, why: str) -> None:
        if running:
            self._end(self.outcomes[job_id], t, lost=why == "lost")

    def done(self) -> bool:
        return False

    def mean_fair_share(self, until: float) -> dict[str, dict[str, float]]:
        """Over the cycles that left some job waiting (as the figures' shares)."""
        self._weigh(until)
        span = max(1e-9, self._contested_seconds)
        return {
            pool: {q: s / span for q, s in by_queue.items()} for pool, by_queue in self._share_seconds.items()
        }

    def _weigh(self, t: float) -> None:
        if self._last is None:
            return
        at, shares = self._last
        self._last = (t, shares)
        if not self._contested:
            return
        self._contested_seconds += t - at
        for pool, by_queue in shares.items():
            seconds = self._share_seconds[pool]
            for queue, share in by_queue.items():
                seconds[queue] = seconds.get(queue, 0.0) + share * (t - at)

    @staticmethod
    def _end(outcome: Outcome, t: float, *, lost: bool) -> None:
        run = outcome.runs[-1]
        run.end, run.lost = t, lost
