"""Bodies of ``POST /v1/job/forecast``: when queued jobs are expected to start, and in words."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from armada.model.wire.base import IdList, Request, Response


class ForecastOutcome(StrEnum):
    """What a forecast says about one job id."""

    #: ``expectedStart`` (and ``low``/``high`` where known) is set.
    FORECAST = "FORECAST"
    #: Queued, but not started within the forecast horizon (``scheduling.forecastHorizon``).
    NOT_WITHIN_HORIZON = "NOT_WITHIN_HORIZON"
    #: Fits no node shape in the cluster: it will not start (``basis`` says why).
    NEVER = "NEVER"
    #: Submitted after the last refresh: asked again in a few seconds, it will have one.
    NOT_YET_FORECAST = "NOT_YET_FORECAST"
    #: Already leased or running: it has started.
    STARTED = "STARTED"
    #: Finished, or never submitted, or in a queue the caller may not read.
    UNKNOWN = "UNKNOWN"


class JobForecastRequest(Request):
    job_ids: IdList


class JobForecastInfo(Response):
    outcome: ForecastOutcome
    expected_start: datetime | None = None
    #: The range: earliest and latest start given every job's low and high runtimes.
    low: datetime | None = None
    high: datetime | None = None
    #: What the start rests on: the runtime basis of the jobs whose end makes room for it.
    basis: str = ""
    #: When the forecast was made.
    as_of: datetime | None = None


class JobForecastResponse(Response):
    forecasts: dict[str, JobForecastInfo] = {}


def span(seconds: float) -> str:
    """A rough length of time: ``40 s``, ``12 min``, ``3.5 h``, ``2.1 days``."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def forecast_words(info: JobForecastInfo, now: datetime) -> str:
    """One forecast in words, e.g. ``in ~12 min (8 min to 20 min) at 10:42:00Z; learned from …``."""
    outcome = info.outcome.value
    if outcome == "FORECAST" and info.expected_start is not None:
        wait = (info.expected_start - now).total_seconds()
        text = f"in ~{span(wait)}" if wait > 0 else "now"
        if info.low is not None and info.high is not None and info.low != info.high:
            low, high = ((t - now).total_seconds() for t in (info.low, info.high))
            text += f" ({span(low)} to {span(high)})"
        elif info.high is None:
            text += " (possibly much later)"
        return f"{text} at {info.expected_start.isoformat()}; basis: {info.basis}"
    if outcome == "NOT_WITHIN_HORIZON":
        return "not within the forecast horizon"
    if outcome == "NEVER":
        return f"never: {info.basis}"
    return {"NOT_YET_FORECAST": "queued, not yet forecast (ask again shortly)", "STARTED": "started"}.get(
        outcome, "UNKNOWN"
    )
