"""Bodies of the job commands: submit, cancel, reprioritize, preempt."""

from __future__ import annotations

from typing import Any

from armada.model.ingress import Ingresses, Services
from armada.model.numbers import Count, Priority
from armada.model.wire.base import IdList, Request, Response
from armada.model.wire.forecasts import JobForecastInfo

#: A job state given by name (``"RUNNING"``) or by upstream's protobuf number (``2``).
StateName = str | Count


class JobSubmitRequestItem(Request):
    priority: Priority = 0.0
    namespace: str = ""
    client_id: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    pod_spec: dict[str, Any] | None = None
    pod_specs: list[dict[str, Any]] = []
    # Upstream fields: merged into the node selector; empty or this scheduler's name; stored
    # as the ``armadaproject.io/externalJobUri`` annotation; ports exposed (``model.ingress``).
    required_node_labels: dict[str, str] = {}
    scheduler: str = ""
    external_job_uri: str = ""
    ingress: Ingresses = []
    services: Services = []


class JobSubmitRequest(Request):
    queue: str
    job_set_id: str
    job_request_items: list[JobSubmitRequestItem]
    #: Check everything and forecast when the jobs would start if submitted now; store nothing.
    dry_run: bool = False


class JobSubmitResponseItem(Response):
    #: Empty in a dry run (nothing was submitted).
    job_id: str
    error: str = ""
    #: Dry runs only: when this job would start if it were submitted now.
    forecast: JobForecastInfo | None = None


class JobSubmitResponse(Response):
    job_response_items: list[JobSubmitResponseItem] = []


class JobCancelRequest(Request):
    queue: str = ""
    job_set_id: str = ""
    job_id: str = ""
    job_ids: IdList = []
    reason: str = ""


class JobSetFilter(Request):
    states: list[StateName] = []


class JobSetCancelRequest(Request):
    queue: str
    job_set_id: str
    filter: JobSetFilter | None = None
    reason: str = ""


class CancellationResult(Response):
    cancelled_ids: list[str] = []


class JobReprioritizeRequest(Request):
    new_priority: Priority
    queue: str = ""
    job_set_id: str = ""
    job_ids: IdList = []


class JobReprioritizeResponse(Response):
    """Per job: ``""`` when reprioritized, otherwise why not."""

    reprioritization_results: dict[str, str] = {}


class JobPreemptRequest(Request):
    job_ids: IdList
    queue: str = ""
    job_set_id: str = ""
    reason: str = ""


class JobPreemptResponse(Response):
    """Upstream answers ``{}``; ``preemptedIds`` (ours) lists the jobs preemption was asked of."""

    preempted_ids: list[str] = []
