"""Bodies of the job queries: status, details, run details, errors."""

from __future__ import annotations

from datetime import datetime

from armada.model.jobs import Job
from armada.model.wire.base import IdList, Request, Response
from armada.model.wire.forecasts import JobForecastInfo
from armada.model.wire.retry_history import RetryHistory


class JobStatusRequest(Request):
    job_ids: IdList


class JobStatusResponse(Response):
    job_states: dict[str, str] = {}


class JobDetailsRequest(Request):
    job_ids: IdList
    expand_job_spec: bool = False
    expand_job_run: bool = False
    #: Ours: each queued job also carries its start-time ``forecast`` (docs/forecast.md).
    expand_forecast: bool = False


class JobRunDetails(Response):
    run_id: str
    job_id: str
    state: str
    cluster: str = ""
    node: str = ""
    leased_ts: datetime | None = None
    pending_ts: datetime | None = None
    started_ts: datetime | None = None
    finished_ts: datetime | None = None
    #: Why the run ended (not upstream's): for a run a retry policy decided, the failure,
    #: its category and the decision, so a retried job's history explains itself.
    reason: str = ""
    #: Ours: where the run's exposed ports are reached (its ``ingressInfo`` event), by port.
    ingress_addresses: dict[int, str] = {}


class JobDetails(Response):
    job_id: str
    queue: str
    jobset: str
    namespace: str
    state: str
    submitted_ts: datetime
    last_transition_ts: datetime
    cancel_ts: datetime | None = None
    cancel_reason: str = ""
    cancel_user: str = ""
    latest_run_id: str = ""
    job_spec: Job | None = None
    job_runs: list[JobRunDetails] = []
    #: Ours, with ``expandJobRun``: every attempt, its failure's category and what decided
    #: what came next (the retry policy and rule, or the legacy path).
    retry_history: RetryHistory | None = None
    #: Ours, with ``expandForecast``, on queued jobs: when it is expected to start
    #: (as ``POST /v1/job/forecast`` answers).
    forecast: JobForecastInfo | None = None


class JobDetailsResponse(Response):
    job_details: dict[str, JobDetails] = {}


class JobRunDetailsRequest(Request):
    run_ids: IdList


class JobRunDetailsResponse(Response):
    job_run_details: dict[str, JobRunDetails] = {}


class JobErrorsRequest(Request):
    job_ids: IdList


class JobErrorsResponse(Response):
    job_errors: dict[str, str] = {}


class ActiveQueuesRequest(Request):
    """Upstream's request has no fields; accepted for symmetry."""


class JobStatusUsingExternalJobUriRequest(Request):
    """Find jobs by the ``externalJobUri`` they were submitted with (upstream's Airflow operator)."""

    queue: str
    jobset: str
    external_job_uri: str
