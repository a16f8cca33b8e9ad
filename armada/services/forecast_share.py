"""One forecast refresh's result, and how the leader shares it with the other replicas.

Only the scheduler's leader refreshes forecasts (it alone holds the fair-share usage the
simulation starts from, and one refresh is enough for the cluster); it stores each refresh's
result in ``scheduler_reports`` and the other replicas (standbys, the other workers of
``serve --workers``) read it from there when it is newer than the one they hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from armada.eventstore.shared_reports import load_report, report_written, save_report
from armada.scheduling.forecast import JobForecast

log = structlog.get_logger(__name__)

#: The row the leader's latest forecasts are stored under.
NAME = "forecasts"


@dataclass(frozen=True)
class Forecasts:
    """One refresh's result: per queued job, its forecast, as of ``as_of`` (epoch seconds)."""

    as_of: float = 0.0
    jobs: dict[str, JobForecast] = field(default_factory=dict)
    #: Seconds the refresh took (copying and simulating).
    duration: float = 0.0
    #: Queue -> when one new job of its typical shape would start if submitted now.
    queues: dict[str, JobForecast] = field(default_factory=dict)
    #: Queue -> that typical shape, in words.
    shapes: dict[str, str] = field(default_factory=dict)

    def stale_at(self) -> float:
        """When the first of these forecasts falls due: if nothing has changed by then, that
        job has not started when it was expected to, and the forecasts need redoing."""
        starts = [
            f.simulated for f in (*self.jobs.values(), *self.queues.values()) if f.simulated is not None
        ]
        return min(starts, default=float("inf"))


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Forecasts).decode


class SharedForecasts:
    """The leader's side (:meth:`publish`) and the other replicas' (:meth:`newer`)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._read: datetime | None = None

    async def publish(self, found: Forecasts) -> None:
        await save_report(self._engine, NAME, _encode(found))

    async def newer(self) -> Forecasts | None:
        """The leader's latest forecasts if stored since the last call, else ``None``."""
        written = await report_written(self._engine, NAME)
        if written is None or written == self._read:
            return None
        body = await load_report(self._engine, NAME)
        if body is None:
            return None
        self._read = written
        try:
            return _decode(body)
        except msgspec.DecodeError:  # written by another version: wait for this one's leader
            log.warning("stored forecasts unreadable; ignored")
            return None
