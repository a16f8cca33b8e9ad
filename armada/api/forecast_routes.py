"""``POST /v1/job/forecast``: when queued jobs are expected to start (docs/forecast.md)."""

from __future__ import annotations

from litestar import post
from litestar.params import JSONBody

from armada.api.dependencies import Forecasts, Reads
from armada.api.responses import problems
from armada.auth.policy import watching
from armada.model.wire.forecasts import JobForecastRequest, JobForecastResponse

TAGS = ["jobs"]


@post(
    "/v1/job/forecast",
    responses=problems(),
    status_code=200,
    tags=TAGS,
    summary="Expected start time, range and basis of queued jobs (UNKNOWN if not readable)",
    opt=watching(),
)
async def job_forecast(
    data: JSONBody[JobForecastRequest], forecasts: Forecasts, reads: Reads
) -> JobForecastResponse:
    visible = await reads.jobs(data.job_ids)
    return JobForecastResponse(forecasts=forecasts.view(visible, data.job_ids))


ROUTES = [job_forecast]
