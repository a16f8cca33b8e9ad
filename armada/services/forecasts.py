"""Start-time forecasts, refreshed in the background by the scheduler's leader.

Every ``scheduling.forecastInterval`` seconds the leader checks whether anything changed
since its last refresh (a job, a node, a queue, a cordon) or a forecast fell due without
its job starting; only then is the current state (the follower's job and node databases,
the queues, cordons and the scheduler's fair-share usage) copied on the event loop, and
the forecast engine (:mod:`armada.scheduling.forecast`) run on the copy in a worker
thread: never inside a scheduling cycle. A refresh that took ``d`` seconds is followed by
a pause of at least ``2 d``, so forecasting holds at most a third of the process's time
however large the backlog. The other replicas compute nothing: they read the leader's
latest refresh (:mod:`.forecast_share`). Readers get the last finished refresh; jobs
submitted since read as not yet forecast.

Each refresh's ranges are calibrated (:mod:`armada.scheduling.calibration`) against how
a sample of earlier forecasts came true: the jobs forecast then that have started since.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

import structlog

from armada.eventstore import dialects
from armada.model.jobs import Job
from armada.model.wire.forecasts import ForecastOutcome, JobForecastInfo
from armada.scheduler.follower import EventLogFollower
from armada.scheduler.loop import SchedulerService
from armada.scheduling.calibration import Calibration
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.forecast import ForecastSnapshot, JobForecast, forecast
from armada.scheduling.jobdb import QUEUED
from armada.scheduling.probes import forecast_with_probes
from armada.scheduling.requirements import JobRequirements, job_requirements
from armada.scheduling.runtimes import RuntimeEstimate
from armada.services.forecast_share import Forecasts, SharedForecasts
from armada.services.runtime_learning import Asked, RuntimeLearner, job_facts

log = structlog.get_logger(__name__)

#: Forecasts per refresh kept to learn the calibration from once their jobs start.
CALIBRATION_SAMPLE = 200
#: At most this many such forecasts wait for their job to start.
CALIBRATION_PENDING = 20_000
#: Refreshes that took at least this many seconds are logged at info.
SLOW_REFRESH = 1.0


class ForecastService:
    """Keeps :attr:`latest` fresh; answers forecasts for jobs not yet submitted on demand."""

    def __init__(
        self,
        follower: EventLogFollower,
        scheduler: SchedulerService,
        config: SchedulingConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.follower = follower
        self.scheduler = scheduler
        self.config = config
        self.clock = clock
        self.learner = RuntimeLearner(config.forecast_default_runtime)
        follower.listen(self.learner)
        self.latest = Forecasts()
        self.calibration = Calibration()
        #: Job -> (when forecast, simulated start, queue): forecasts waiting for their job to start.
        self._pending: dict[str, tuple[float, float, str]] = {}
        self._task: asyncio.Task[None] | None = None
        #: One simulation at a time (refreshes and dry runs): bounded CPU.
        self._busy = asyncio.Lock()
        #: What the last refresh was made from (:meth:`_fingerprint`).
        self._refreshed_on: tuple[object, ...] | None = None
        #: The leader's refreshes, for the other replicas (PostgreSQL: SQLite has one process).
        engine = scheduler.store.engine
        self._shared = SharedForecasts(engine) if dialects.is_postgres(engine) else None

    def start(self) -> None:
        if self.config.forecast_interval > 0:
            self._task = asyncio.create_task(self._run(), name="forecasts")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bad refresh leaves the previous forecasts in place
                log.exception("forecast refresh failed", error=str(exc))
            await asyncio.sleep(max(self.config.forecast_interval, 2 * self.latest.duration))

    @property
    def paused(self) -> bool:
        """More jobs are active than ``scheduling.forecastMaxJobs``: no forecasts meanwhile."""
        limit = self.config.forecast_max_jobs
        return bool(limit) and len(self.follower.state.jobs) > limit

    async def tick(self) -> None:
        """One turn of the background loop: the leader refreshes if anything changed (and
        shares the result); another replica takes the leader's latest, if newer."""
        if not self.scheduler.leader.is_leader:
            shared = await self._shared.newer() if self._shared is not None else None
            if shared is not None:
                self.latest = shared
            return
        if self._fingerprint() == self._refreshed_on and self.clock() < self.latest.stale_at():
            return
        found = await self.refresh()
        if self._shared is not None:
            await self._shared.publish(found)

    def _fingerprint(self) -> tuple[object, ...]:
        """What a refresh depends on, cheaply: equal fingerprints, equal forecasts."""
        state = self.follower.state
        return (
            state.jobs.version,
            state.jobs.nodes.version,
            tuple(state.queue_specs()),
            frozenset(state.cordoned_executors),
            self.paused,
        )

    async def refresh(self) -> Forecasts:
        """Forecast every queued job now; the result becomes :attr:`latest`."""
        self._refreshed_on = self._fingerprint()
        if self.paused:
            self.latest = Forecasts(as_of=self.clock())
            log.info("forecasts paused", jobs=len(self.follower.state.jobs))
            return self.latest
        self._learn()
        self.latest = await self._forecast(probes=True)
        self._remember(self.latest)
        slow = self.latest.duration >= SLOW_REFRESH  # it shares the interpreter with the cycles
        (log.info if slow else log.debug)(
            "forecasts refreshed", jobs=len(self.latest.jobs), seconds=round(self.latest.duration, 3)
        )
        return self.latest

    def _learn(self) -> None:
        """Calibrate with the remembered forecasts whose jobs have started since."""
        started, jobs = self.learner.started, self.follower.state.jobs
        for job_id, (made, simulated, queue) in list(self._pending.items()):
            if job_id in started:
                self.calibration.observe(simulated - made, started[job_id] - made, queue)
                del self._pending[job_id]
            elif job_id not in jobs:  # cancelled, or started and ended between refreshes
                del self._pending[job_id]

    def _remember(self, found: Forecasts) -> None:
        """Keep an evenly spread sample of ``found``'s forecasts to calibrate with."""
        fresh = [
            (job_id, f.simulated)
            for job_id, f in found.jobs.items()
            if f.simulated is not None and job_id not in self._pending
        ]
        room = max(0, CALIBRATION_PENDING - len(self._pending))
        every = max(1, len(fresh) // CALIBRATION_SAMPLE)
        jobs = self.follower.state.jobs
        for job_id, simulated in fresh[::every][: min(room, CALIBRATION_SAMPLE)]:
            if job_id in jobs:
                self._pending[job_id] = (found.as_of, simulated, jobs.queue_of(job_id))

    def view(self, visible: Sequence[str], asked: Sequence[str]) -> dict[str, JobForecastInfo]:
        """The forecast of each ``asked`` id; ids not in ``visible`` (that the caller may not
        read, or that do not exist) read as unknown."""
        latest, jobs = self.latest, self.follower.state.jobs
        readable = set(visible)
        out: dict[str, JobForecastInfo] = {}
        for job_id in asked:
            found = latest.jobs.get(job_id)
            if job_id not in readable:
                out[job_id] = JobForecastInfo(outcome=ForecastOutcome.UNKNOWN)
            elif found is not None:
                out[job_id] = describe(found, latest.as_of)
            elif job_id in jobs and jobs.state(job_id) != QUEUED:
                out[job_id] = JobForecastInfo(outcome=ForecastOutcome.STARTED)
            elif job_id in jobs:
                why = f"paused: more than {self.config.forecast_max_jobs} active jobs" if self.paused else ""
                out[job_id] = JobForecastInfo(outcome=ForecastOutcome.NOT_YET_FORECAST, basis=why)
            else:
                out[job_id] = JobForecastInfo(outcome=ForecastOutcome.UNKNOWN)
        return out

    def new_jobs(self) -> dict[str, tuple[str, JobForecastInfo]]:
        """Queue -> (its typical shape, when a new job of it would start), from the last refresh."""
        latest = self.latest
        return {
            queue: (latest.shapes[queue], describe(found, latest.as_of))
            for queue, found in sorted(latest.queues.items())
        }

    def expected_starts(self, job_ids: Sequence[str]) -> dict[str, datetime]:
        """The expected start of those of ``job_ids`` the last refresh forecast one for (the
        caller has checked that it may read them)."""
        jobs = self.latest.jobs
        starts = {job_id: jobs[job_id].expected_start for job_id in job_ids if job_id in jobs}
        return {job_id: _moment(start) for job_id, start in starts.items() if start is not None}

    async def if_submitted(self, jobs: Sequence[Job]) -> dict[str, JobForecastInfo]:
        """When ``jobs`` would start if they were submitted now (they are not); none while paused."""
        if self.paused:
            return {}
        now = self.clock()
        extra = [job_requirements(job, submitted=now) for job in jobs]
        running = self.learner.running(self.follower.state, now)
        known = {
            job.id: self.learner.estimate(
                job_facts(job), job.queue, job.job_set_id, running.get((job.queue, job.job_set_id), ())
            )
            for job in jobs
        }
        found = await self._forecast(extra, known)
        return {job.id: describe(found.jobs[job.id], found.as_of) for job in jobs}

    async def _forecast(
        self,
        extra: Sequence[JobRequirements] = (),
        known: Mapping[str, RuntimeEstimate] | None = None,
        *,
        probes: bool = False,
    ) -> Forecasts:
        async with self._busy:
            started = time.monotonic()
            state = self.follower.state
            now = self.clock()
            snapshot = ForecastSnapshot(
                db=state.jobs.copy(),  # consistent: the event loop is the only writer
                queues=state.queue_specs(),
                config=self.config,
                state=self.scheduler.scheduler_state,
                now=now,
                paused_executors=frozenset(state.cordoned_executors),
                started=dict(self.learner.started),
                cycle_period=self.scheduler.settings.cycle_period,
                extra_jobs=extra,
            )
            asked = self.learner.asked(state, now)  # worked out in the thread, with the simulation
            default = self.learner.estimate(None, "", "")
            horizon = self.config.forecast_horizon
            found = await asyncio.to_thread(
                _simulate, snapshot, asked, known or {}, default, horizon, self.calibration, probes
            )
            return dataclasses.replace(found, duration=time.monotonic() - started)


def _simulate(
    snapshot: ForecastSnapshot,
    asked: Asked,
    known: Mapping[str, RuntimeEstimate],
    default: RuntimeEstimate,
    horizon: float,
    calibration: Calibration,
    probes: bool,
) -> Forecasts:
    """The active jobs' runtime estimates (``known``: those of the jobs not submitted), the
    queued jobs' forecasts and, with ``probes``, each queue's for a new job of its typical
    shape (:func:`~armada.scheduling.probes.forecast_with_probes`)."""
    estimates = {**asked.estimates(), **known}
    if not probes:
        jobs = forecast(snapshot, estimates, default, horizon, calibration=calibration)
        return Forecasts(snapshot.now, jobs)
    jobs, found = forecast_with_probes(snapshot, estimates, default, horizon, calibration=calibration)
    return Forecasts(
        snapshot.now,
        jobs,
        queues={queue: forecast for queue, (_, forecast) in found.items()},
        shapes={queue: probe.shape for queue, (probe, _) in found.items()},
    )


def _time(seconds: float | None) -> datetime | None:
    return None if seconds is None else _moment(seconds)


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def describe(found: JobForecast, as_of: float) -> JobForecastInfo:
    """One engine forecast as the API tells it."""
    if found.rejected:
        return JobForecastInfo(outcome=ForecastOutcome.NEVER, basis=found.rejected, as_of=_time(as_of))
    outcome = ForecastOutcome.NOT_WITHIN_HORIZON if found.expected_start is None else ForecastOutcome.FORECAST
    return JobForecastInfo(
        outcome=outcome,
        expected_start=_time(found.expected_start),
        low=_time(found.low),
        high=_time(found.high),
        basis=found.basis,
        as_of=_time(as_of),
    )
