"""Bodies of ``POST /v1/job/forecast``: when queued jobs are expected to start."""

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
