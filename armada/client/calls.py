"""The API's calls as data: method, path, body and response type.

Both clients build the same :class:`Call` objects and differ only in how they send them,
so the mapping of operations to endpoints exists once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, NamedTuple, TypeVar
from urllib.parse import quote, urlencode

import httpx
import msgspec

from armada.client.errors import ArmadaApiError, ArmadaTransportError, PermissionDenied, ServerError
from armada.lookout.wire import JobsRequest, JobsResponse
from armada.model.events import AnyEvent
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy
from armada.model.wire.base import Empty
from armada.model.wire.events import PERMISSION_DENIED, JobSetRequest, StreamError, decode_stream_line
from armada.model.wire.fleet import (
    ExecutorJobsRequest,
    ExecutorList,
    ExecutorSettingsUpsertRequest,
    NodeCordonRequest,
    NodeJobsRequest,
)
from armada.model.wire.forecasts import JobForecastRequest, JobForecastResponse
from armada.model.wire.identity import WhoAmI
from armada.model.wire.jobs import (
    CancellationResult,
    JobCancelRequest,
    JobPreemptRequest,
    JobPreemptResponse,
    JobReprioritizeRequest,
    JobReprioritizeResponse,
    JobSetCancelRequest,
    JobSetFilter,
    JobSubmitRequest,
    JobSubmitRequestItem,
    JobSubmitResponse,
    StateName,
)
from armada.model.wire.logs import LogRequest, LogResponse
from armada.model.wire.queries import (
    ActiveQueuesRequest,
    JobDetailsRequest,
    JobDetailsResponse,
    JobErrorsRequest,
    JobErrorsResponse,
    JobRunDetailsRequest,
    JobRunDetailsResponse,
    JobStatusRequest,
    JobStatusResponse,
)
from armada.model.wire.queues import (
    ActiveQueuesResponse,
    BatchQueueResponse,
    QueueCancelRequest,
    QueueList,
    QueuePreemptRequest,
    StreamingQueueLine,
)
from armada.model.wire.retry import RetryPolicyList
from armada.model.wire.usage import UsageResponse
from armada.model.wire.version import ServerVersion
from armada.reports.wire import JobReport, QueueReport, SchedulingReport

T = TypeVar("T")
_encoder = msgspec.json.Encoder()
JSON_HEADERS = {"Content-Type": "application/json"}


class Call(NamedTuple, Generic[T]):
    method: str
    path: str
    body: msgspec.Struct | None
    result: type[T]
    #: For streamed calls: how one line of the response becomes a ``result``.
    line_parser: Callable[[str], T] | None = None
    #: A stream that follows new results as they happen (``watch``): it is silent for as
    #: long as nothing happens, so it has no read timeout.
    follows: bool = False

    def request_options(self) -> dict[str, Any]:
        if self.body is None:
            return {}
        return {"content": _encoder.encode(self.body), "headers": JSON_HEADERS}

    def stream_options(self, timeout: httpx.Timeout) -> dict[str, Any]:
        """Request options of a streamed call, given the client's ``timeout``."""
        options = self.request_options()
        if self.follows:
            options["timeout"] = httpx.Timeout(
                connect=timeout.connect, read=None, write=timeout.write, pool=timeout.pool
            )
        return options

    def decode(self, response: httpx.Response) -> T:
        check(response)
        return msgspec.json.decode(response.content, type=self.result)

    def decode_line(self, line: str) -> T:
        """One line of a streamed response."""
        if self.line_parser is not None:
            return self.line_parser(line)
        return msgspec.json.decode(line, type=self.result)


@contextmanager
def transport_errors() -> Iterator[None]:
    """Raise an ``httpx.TransportError`` (no answer) as :class:`ArmadaTransportError`."""
    try:
        yield
    except httpx.TransportError as exc:
        raise ArmadaTransportError(str(exc) or type(exc).__name__) from exc


def check(response: httpx.Response) -> None:
    """Raise :class:`ArmadaApiError` for a non-2xx response (its body must have been read)."""
    if response.is_error:
        raise ArmadaApiError.from_response(response)


def _segment(value: str) -> str:
    return quote(value, safe="")


def create_queue(queue: Queue) -> Call[Empty]:
    return Call("POST", "/v1/queue", queue, Empty)


def update_queue(queue: Queue) -> Call[Empty]:
    return Call("PUT", f"/v1/queue/{_segment(queue.name)}", queue, Empty)


def delete_queue(name: str) -> Call[Empty]:
    return Call("DELETE", f"/v1/queue/{_segment(name)}", None, Empty)


def get_queue(name: str) -> Call[Queue]:
    return Call("GET", f"/v1/queue/{_segment(name)}", None, Queue)


def cordon_queue(name: str, cordoned: bool) -> Call[Empty]:
    action = "cordon" if cordoned else "uncordon"
    return Call("POST", f"/v1/queue/{_segment(name)}/{action}", None, Empty)


def preempt_on_queue(
    name: str, priority_classes: Sequence[str], pools: Sequence[str]
) -> Call[JobPreemptResponse]:
    body = QueuePreemptRequest(priority_classes=list(priority_classes), pools=list(pools))
    return Call("POST", f"/v1/queue/{_segment(name)}/preempt", body, JobPreemptResponse)


def cancel_on_queue(
    name: str, priority_classes: Sequence[str], pools: Sequence[str], states: Sequence[StateName]
) -> Call[CancellationResult]:
    body = QueueCancelRequest(
        priority_classes=list(priority_classes), pools=list(pools), job_states=list(states)
    )
    return Call("POST", f"/v1/queue/{_segment(name)}/cancel", body, CancellationResult)


# --- fleet controls -------------------------------------------------------------------------


def executor_settings(name: str, cordoned: bool, reason: str) -> Call[Empty]:
    body = ExecutorSettingsUpsertRequest(name=name, cordoned=cordoned, cordon_reason=reason)
    return Call("PUT", f"/v1/executor_settings/{_segment(name)}", body, Empty)


def delete_executor_settings(name: str) -> Call[Empty]:
    return Call("DELETE", f"/v1/executor_settings/{_segment(name)}", None, Empty)


def whoami() -> Call[WhoAmI]:
    return Call("GET", "/v1/whoami", None, WhoAmI)


def lookout_jobs(request: JobsRequest) -> Call[JobsResponse]:
    """A page of Lookout's jobs table: the one query path of job listings."""
    return Call("POST", "/api/v1/jobs", request, JobsResponse)


def _sse_line(line: str) -> str:
    return line


def lookout_changes() -> Call[str]:
    """Streamed (server-sent events, one raw line each): the log's head whenever it moves."""
    return Call("GET", "/api/v1/changes", None, str, _sse_line, follows=True)


def server_version() -> Call[ServerVersion]:
    return Call("GET", "/v1/version", None, ServerVersion)


def list_executors() -> Call[ExecutorList]:
    return Call("GET", "/v1/executors", None, ExecutorList)


def forget_executor(name: str) -> Call[Empty]:
    return Call("DELETE", f"/v1/executor/{_segment(name)}", None, Empty)


def cordon_node(node: str, executor: str, reason: str, cordoned: bool) -> Call[Empty]:
    action = "cordon" if cordoned else "uncordon"
    body = NodeCordonRequest(node_name=node, executor=executor, reason=reason)
    return Call("POST", f"/v1/binoculars/{action}", body, Empty)


def preempt_on_executor(
    name: str, node: str, queues: Sequence[str], priority_classes: Sequence[str]
) -> Call[JobPreemptResponse]:
    """On an executor, or (``node`` given, ``name`` its executor) on one of its nodes."""
    path, body = _on_executor("preempt", name, node, queues, priority_classes)
    return Call("POST", path, body, JobPreemptResponse)


def cancel_on_executor(
    name: str, node: str, queues: Sequence[str], priority_classes: Sequence[str]
) -> Call[CancellationResult]:
    path, body = _on_executor("cancel", name, node, queues, priority_classes)
    return Call("POST", path, body, CancellationResult)


def _on_executor(
    verb: str, executor: str, node: str, queues: Sequence[str], classes: Sequence[str]
) -> tuple[str, msgspec.Struct]:
    if node:
        body = NodeJobsRequest(
            name=node, executor=executor, queues=list(queues), priority_classes=list(classes)
        )
        return f"/v1/node/{verb}/{_segment(node)}", body
    request = ExecutorJobsRequest(name=executor, queues=list(queues), priority_classes=list(classes))
    return f"/v1/executor/{verb}/{_segment(executor)}", request


def create_retry_policy(policy: RetryPolicy) -> Call[Empty]:
    return Call("POST", "/v1/retry-policy", policy, Empty)


def update_retry_policy(policy: RetryPolicy) -> Call[Empty]:
    return Call("PUT", f"/v1/retry-policy/{_segment(policy.name)}", policy, Empty)


def delete_retry_policy(name: str) -> Call[Empty]:
    return Call("DELETE", f"/v1/retry-policy/{_segment(name)}", None, Empty)


def get_retry_policy(name: str) -> Call[RetryPolicy]:
    return Call("GET", f"/v1/retry-policy/{_segment(name)}", None, RetryPolicy)


def list_retry_policies() -> Call[RetryPolicyList]:
    return Call("GET", "/v1/retry-policies", None, RetryPolicyList)


def create_queues(queues: Sequence[Queue]) -> Call[BatchQueueResponse]:
    return Call("POST", "/v1/batched/create_queues", QueueList(queues=list(queues)), BatchQueueResponse)


def update_queues(queues: Sequence[Queue]) -> Call[BatchQueueResponse]:
    return Call("PUT", "/v1/batched/update_queues", QueueList(queues=list(queues)), BatchQueueResponse)


def list_queues() -> Call[StreamingQueueLine]:
    """Streamed: one :class:`StreamingQueueLine` per line."""
    return Call("GET", "/v1/batched/queues", None, StreamingQueueLine)


def active_queues() -> Call[ActiveQueuesResponse]:
    return Call("POST", "/v1/queues/active", ActiveQueuesRequest(), ActiveQueuesResponse)


def submit_jobs(
    queue: str, job_set_id: str, items: Sequence[JobSubmitRequestItem], dry_run: bool = False
) -> Call[JobSubmitResponse]:
    items = list(items)
    body = JobSubmitRequest(queue=queue, job_set_id=job_set_id, job_request_items=items, dry_run=dry_run)
    return Call("POST", "/v1/job/submit", body, JobSubmitResponse)


def cancel_jobs(queue: str, job_set_id: str, job_ids: Sequence[str], reason: str) -> Call[CancellationResult]:
    body = JobCancelRequest(queue=queue, job_set_id=job_set_id, job_ids=list(job_ids), reason=reason)
    return Call("POST", "/v1/job/cancel", body, CancellationResult)


def cancel_job_set(
    queue: str, job_set_id: str, states: Sequence[StateName], reason: str
) -> Call[CancellationResult]:
    body = JobSetCancelRequest(
        queue=queue, job_set_id=job_set_id, filter=JobSetFilter(states=list(states)), reason=reason
    )
    return Call("POST", "/v1/jobset/cancel", body, CancellationResult)


def reprioritize_jobs(
    queue: str, job_set_id: str, job_ids: Sequence[str], new_priority: float
) -> Call[JobReprioritizeResponse]:
    body = JobReprioritizeRequest(
        queue=queue, job_set_id=job_set_id, job_ids=list(job_ids), new_priority=new_priority
    )
    return Call("POST", "/v1/job/reprioritize", body, JobReprioritizeResponse)


def preempt_jobs(
    queue: str, job_set_id: str, job_ids: Sequence[str], reason: str
) -> Call[JobPreemptResponse]:
    body = JobPreemptRequest(queue=queue, job_set_id=job_set_id, job_ids=list(job_ids), reason=reason)
    return Call("POST", "/v1/job/preempt", body, JobPreemptResponse)


def job_status(job_ids: Sequence[str]) -> Call[JobStatusResponse]:
    return Call("POST", "/v1/job/status", JobStatusRequest(job_ids=list(job_ids)), JobStatusResponse)


def job_forecast(job_ids: Sequence[str]) -> Call[JobForecastResponse]:
    return Call("POST", "/v1/job/forecast", JobForecastRequest(job_ids=list(job_ids)), JobForecastResponse)


def job_details(
    job_ids: Sequence[str], expand_spec: bool, expand_runs: bool, expand_forecast: bool = False
) -> Call[JobDetailsResponse]:
    body = JobDetailsRequest(
        job_ids=list(job_ids),
        expand_job_spec=expand_spec,
        expand_job_run=expand_runs,
        expand_forecast=expand_forecast,
    )
    return Call("POST", "/v1/job/details", body, JobDetailsResponse)


def run_details(run_ids: Sequence[str]) -> Call[JobRunDetailsResponse]:
    return Call("POST", "/v1/run/details", JobRunDetailsRequest(run_ids=list(run_ids)), JobRunDetailsResponse)


def job_errors(job_ids: Sequence[str]) -> Call[JobErrorsResponse]:
    return Call("POST", "/v1/job/errors", JobErrorsRequest(job_ids=list(job_ids)), JobErrorsResponse)


def job_logs(request: LogRequest) -> Call[LogResponse]:
    return Call("POST", "/v1/binoculars/log", request, LogResponse)


def scheduling_report() -> Call[SchedulingReport]:
    return Call("GET", "/v1/scheduling-report", None, SchedulingReport)


def queue_report(name: str) -> Call[QueueReport]:
    return Call("GET", f"/v1/queue/{_segment(name)}/scheduler-report", None, QueueReport)


def usage(since: str = "", until: str = "", by: str = "", resource: str = "") -> Call[UsageResponse]:
    given = {"since": since, "until": until, "by": by, "resource": resource}
    query = urlencode({name: value for name, value in given.items() if value})
    return Call("GET", "/v1/usage" + (f"?{query}" if query else ""), None, UsageResponse)


def job_report(job_id: str) -> Call[JobReport]:
    return Call("GET", f"/v1/job/{_segment(job_id)}/scheduler-report", None, JobReport)


class StreamedEvent(NamedTuple):
    message_id: str
    event: AnyEvent


def _event_line(line: str) -> StreamedEvent:
    try:
        message_id, event = decode_stream_line(line)
    except StreamError as exc:  # the server ended the stream: say why, as a refusal would
        error = PermissionDenied(403, "Stream ended", exc.message) if exc.code == PERMISSION_DENIED else None
        raise error or ServerError(500, "Stream ended", exc.message) from None
    return StreamedEvent(message_id, event)


def job_set_events(queue: str, job_set_id: str, *, watch: bool, from_message_id: str) -> Call[StreamedEvent]:
    """Streamed: one :class:`StreamedEvent` per line; with ``watch`` it follows new events
    (and may be silent for hours)."""
    body = JobSetRequest(watch=watch, from_message_id=from_message_id)
    path = f"/v1/job-set/{_segment(queue)}/{_segment(job_set_id)}"
    return Call("POST", path, body, StreamedEvent, _event_line, follows=watch)
