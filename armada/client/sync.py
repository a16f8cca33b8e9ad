"""The blocking client (scripts, the CLI). Mirrors :class:`~armada.client.aio.AsyncArmadaClient`."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from types import TracebackType
from typing import TypeVar

import httpx

from armada.client import calls
from armada.client.calls import Call, StreamedEvent
from armada.client.config import ClientConfig
from armada.lookout.wire import JobsRequest, JobsResponse
from armada.model.queues import Queue
from armada.model.retry import RetryPolicy
from armada.model.wire import jobs, logs, queries
from armada.model.wire.fleet import ExecutorSummary
from armada.model.wire.forecasts import JobForecastInfo
from armada.model.wire.identity import WhoAmI
from armada.model.wire.queues import BatchQueueResponse
from armada.model.wire.usage import UsageResponse
from armada.model.wire.version import ServerVersion
from armada.reports.wire import JobReport, QueueReport, SchedulingReport

T = TypeVar("T")


class ArmadaClient:
    """Typed client of the job and queue API over ``httpx.Client``."""

    def __init__(
        self, config: ClientConfig | str | None = None, *, transport: httpx.BaseTransport | None = None
    ):
        config = ClientConfig(armada_url=config) if isinstance(config, str) else config or ClientConfig()
        self.config = config
        self._http = httpx.Client(transport=transport, **config.httpx_options())

    def __enter__(self) -> ArmadaClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[T]) -> T:
        with calls.transport_errors():
            response = self._http.request(call.method, call.path, **call.request_options())
        return call.decode(response)

    def stream(self, call: Call[T]) -> Generator[T, None, None]:
        """Results of a streamed call, one per NDJSON line, as they arrive."""
        options = call.stream_options(self._http.timeout)
        with calls.transport_errors(), self._http.stream(call.method, call.path, **options) as response:
            if response.is_error:
                response.read()
                calls.check(response)
            for line in response.iter_lines():
                if line.strip():
                    yield call.decode_line(line)

    def server_version(self) -> ServerVersion:
        """The server's version and its database's schema revision."""
        return self.send(calls.server_version())

    def health(self) -> bool:
        return self._http.get("/health").status_code == 204

    def whoami(self) -> WhoAmI:
        """The caller's name (the owner of the jobs it submits) and groups."""
        return self.send(calls.whoami())

    # --- queues -----------------------------------------------------------------------

    def create_queue(self, queue: Queue) -> None:
        self.send(calls.create_queue(queue))

    def update_queue(self, queue: Queue) -> None:
        self.send(calls.update_queue(queue))

    def delete_queue(self, name: str) -> None:
        self.send(calls.delete_queue(name))

    def get_queue(self, name: str) -> Queue:
        return self.send(calls.get_queue(name))

    def list_queues(self) -> list[Queue]:
        return [
            line.result.Event.queue for line in self.stream(calls.list_queues()) if line.result.Event.queue
        ]

    def cordon_queue(self, name: str, cordoned: bool = True) -> None:
        self.send(calls.cordon_queue(name, cordoned))

    def preempt_on_queue(
        self, name: str, priority_classes: Sequence[str] = (), pools: Sequence[str] = ()
    ) -> list[str]:
        return self.send(calls.preempt_on_queue(name, priority_classes, pools)).preempted_ids

    def cancel_on_queue(
        self,
        name: str,
        priority_classes: Sequence[str] = (),
        pools: Sequence[str] = (),
        states: Sequence[jobs.StateName] = (),
    ) -> list[str]:
        return self.send(calls.cancel_on_queue(name, priority_classes, pools, states)).cancelled_ids

    # --- fleet controls -------------------------------------------------------------------

    def cordon_executor(self, name: str, reason: str = "", cordoned: bool = True) -> None:
        self.send(calls.executor_settings(name, cordoned, reason))

    def delete_executor_settings(self, name: str) -> None:
        self.send(calls.delete_executor_settings(name))

    def list_executors(self) -> list[ExecutorSummary]:
        return self.send(calls.list_executors()).executors

    def forget_executor(self, name: str) -> None:
        self.send(calls.forget_executor(name))

    def cordon_node(self, node: str, executor: str = "", reason: str = "", cordoned: bool = True) -> None:
        self.send(calls.cordon_node(node, executor, reason, cordoned))

    def preempt_on_executor(
        self, name: str, *, node: str = "", queues: Sequence[str] = (), priority_classes: Sequence[str] = ()
    ) -> list[str]:
        """On executor ``name``, or on its ``node``."""
        return self.send(calls.preempt_on_executor(name, node, queues, priority_classes)).preempted_ids

    def cancel_on_executor(
        self, name: str, *, node: str = "", queues: Sequence[str] = (), priority_classes: Sequence[str] = ()
    ) -> list[str]:
        return self.send(calls.cancel_on_executor(name, node, queues, priority_classes)).cancelled_ids

    # --- retry policies -----------------------------------------------------------------

    def create_retry_policy(self, policy: RetryPolicy) -> None:
        self.send(calls.create_retry_policy(policy))

    def update_retry_policy(self, policy: RetryPolicy) -> None:
        self.send(calls.update_retry_policy(policy))

    def delete_retry_policy(self, name: str) -> None:
        self.send(calls.delete_retry_policy(name))

    def get_retry_policy(self, name: str) -> RetryPolicy:
        return self.send(calls.get_retry_policy(name))

    def list_retry_policies(self) -> list[RetryPolicy]:
        return self.send(calls.list_retry_policies()).retry_policies

    def create_queues(self, queues: Sequence[Queue]) -> BatchQueueResponse:
        return self.send(calls.create_queues(queues))

    def update_queues(self, queues: Sequence[Queue]) -> BatchQueueResponse:
        return self.send(calls.update_queues(queues))

    def active_queues(self) -> dict[str, list[str]]:
        response = self.send(calls.active_queues())
        return {pool: active.queues for pool, active in response.active_queues_by_pool.items()}

    # --- jobs -------------------------------------------------------------------------

    def submit_jobs(
        self, queue: str, job_set_id: str, items: Sequence[jobs.JobSubmitRequestItem]
    ) -> list[str]:
        """Submit jobs (all or none); return their ids in order."""
        response = self.send(calls.submit_jobs(queue, job_set_id, items))
        return [item.job_id for item in response.job_response_items]

    def forecast_submission(
        self, queue: str, job_set_id: str, items: Sequence[jobs.JobSubmitRequestItem]
    ) -> list[JobForecastInfo | None]:
        """A dry run: when each job would start if submitted now (nothing is submitted)."""
        response = self.send(calls.submit_jobs(queue, job_set_id, items, dry_run=True))
        return [item.forecast for item in response.job_response_items]

    def cancel_jobs(self, queue: str, job_set_id: str, job_ids: Sequence[str], reason: str = "") -> list[str]:
        return self.send(calls.cancel_jobs(queue, job_set_id, job_ids, reason)).cancelled_ids

    def cancel_job_set(
        self, queue: str, job_set_id: str, states: Sequence[jobs.StateName] = (), reason: str = ""
    ) -> list[str]:
        return self.send(calls.cancel_job_set(queue, job_set_id, states, reason)).cancelled_ids

    def reprioritize_jobs(
        self, queue: str, job_set_id: str, job_ids: Sequence[str], new_priority: float
    ) -> dict[str, str]:
        call = calls.reprioritize_jobs(queue, job_set_id, job_ids, new_priority)
        return self.send(call).reprioritization_results

    def preempt_jobs(
        self, queue: str, job_set_id: str, job_ids: Sequence[str], reason: str = ""
    ) -> list[str]:
        return self.send(calls.preempt_jobs(queue, job_set_id, job_ids, reason)).preempted_ids

    def job_status(self, job_ids: Sequence[str]) -> dict[str, str]:
        return self.send(calls.job_status(job_ids)).job_states

    def job_forecast(self, job_ids: Sequence[str]) -> dict[str, JobForecastInfo]:
        """When queued jobs are expected to start (ids not readable: ``UNKNOWN``)."""
        return self.send(calls.job_forecast(job_ids)).forecasts

    def job_details(
        self,
        job_ids: Sequence[str],
        *,
        expand_spec: bool = False,
        expand_runs: bool = False,
        expand_forecast: bool = False,
    ) -> dict[str, queries.JobDetails]:
        call = calls.job_details(job_ids, expand_spec, expand_runs, expand_forecast)
        return self.send(call).job_details

    def run_details(self, run_ids: Sequence[str]) -> dict[str, queries.JobRunDetails]:
        return self.send(calls.run_details(run_ids)).job_run_details

    def job_logs(self, request: logs.LogRequest) -> list[logs.LogLine]:
        """Lines of a job's latest run (or ``request.run_id``), as the cluster keeps them."""
        return self.send(calls.job_logs(request)).log

    def job_errors(self, job_ids: Sequence[str]) -> dict[str, str]:
        return self.send(calls.job_errors(job_ids)).job_errors

    def job_set_events(
        self, queue: str, job_set_id: str, *, watch: bool = False, from_message_id: str = ""
    ) -> Generator[StreamedEvent, None, None]:
        """The job set's events; with ``watch`` the iterator follows new events until closed."""
        return self.stream(
            calls.job_set_events(queue, job_set_id, watch=watch, from_message_id=from_message_id)
        )

    def list_jobs(self, request: JobsRequest) -> JobsResponse:
        """A filtered, sorted page of the jobs the caller may read (Lookout's query)."""
        return self.send(calls.lookout_jobs(request))

    def changes(self) -> Generator[int, None, None]:
        """The log's head each time it moves (first: its head now), until closed."""
        for line in self.stream(calls.lookout_changes()):
            if line.startswith("data:"):
                yield int(line.removeprefix("data:").strip())

    # --- scheduling reports -----------------------------------------------------------

    def scheduling_report(self) -> SchedulingReport:
        """The last scheduling cycles, newest first."""
        return self.send(calls.scheduling_report())

    def queue_report(self, name: str) -> QueueReport:
        """A queue's shares, limits and why each of its scheduling keys waits."""
        return self.send(calls.queue_report(name))

    def usage(self, since: str = "", until: str = "", by: str = "", resource: str = "") -> UsageResponse:
        """Resource-seconds used and lost, shares and waits per group (``GET /v1/usage``)."""
        return self.send(calls.usage(since, until, by, resource))

    def job_report(self, job_id: str) -> JobReport:
        """Why one job waits, or where and when it was leased."""
        return self.send(calls.job_report(job_id))
