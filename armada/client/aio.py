"""The asyncio client (the executor, async programs). Mirrors :class:`~armada.client.sync.ArmadaClient`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from types import TracebackType
from typing import TypeVar

import httpx

from armada.client import calls
from armada.client.calls import Call, StreamedEvent
from armada.client.config import ClientConfig
from armada.client.transport import client_transport
from armada.lookout.wire import JobsRequest, JobsResponse
from armada.model.queues import Queue
from armada.model.wire import jobs, logs, queries
from armada.model.wire.forecasts import JobForecastInfo
from armada.model.wire.identity import WhoAmI
from armada.model.wire.queues import BatchQueueResponse
from armada.model.wire.usage import UsageResponse
from armada.model.wire.version import ServerVersion
from armada.reports.wire import JobReport, QueueReport, SchedulingReport

T = TypeVar("T")


class AsyncArmadaClient:
    """Typed client of the job and queue API over ``httpx.AsyncClient`` (on
    :class:`~armada.client.transport.Http11Transport` unless a ``transport`` is given)."""

    def __init__(
        self, config: ClientConfig | str | None = None, *, transport: httpx.AsyncBaseTransport | None = None
    ):
        config = ClientConfig(armada_url=config) if isinstance(config, str) else config or ClientConfig()
        self.config = config
        options = config.httpx_options()
        transport = transport or client_transport(options.get("verify", True))
        self._http = httpx.AsyncClient(transport=transport, **options)

    async def __aenter__(self) -> AsyncArmadaClient:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[T]) -> T:
        with calls.transport_errors():
            response = await self._http.request(call.method, call.path, **call.request_options())
        return call.decode(response)

    async def stream(self, call: Call[T]) -> AsyncGenerator[T, None]:
        """Results of a streamed call, one per NDJSON line, as they arrive."""
        options = call.stream_options(self._http.timeout)
        with calls.transport_errors():
            async with self._http.stream(call.method, call.path, **options) as response:
                if response.is_error:
                    await response.aread()
                    calls.check(response)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield call.decode_line(line)

    async def server_version(self) -> ServerVersion:
        """The server's version and its database's schema revision."""
        return await self.send(calls.server_version())

    async def health(self) -> bool:
        return (await self._http.get("/health")).status_code == 204

    async def whoami(self) -> WhoAmI:
        """The caller's name (the owner of the jobs it submits) and groups."""
        return await self.send(calls.whoami())

    # --- queues -----------------------------------------------------------------------

    async def create_queue(self, queue: Queue) -> None:
        await self.send(calls.create_queue(queue))

    async def update_queue(self, queue: Queue) -> None:
        await self.send(calls.update_queue(queue))

    async def delete_queue(self, name: str) -> None:
        await self.send(calls.delete_queue(name))

    async def get_queue(self, name: str) -> Queue:
        return await self.send(calls.get_queue(name))

    async def list_queues(self) -> list[Queue]:
        lines = self.stream(calls.list_queues())
        return [line.result.Event.queue async for line in lines if line.result.Event.queue]

    async def cordon_queue(self, name: str, cordoned: bool = True) -> None:
        await self.send(calls.cordon_queue(name, cordoned))

    async def create_queues(self, queues: Sequence[Queue]) -> BatchQueueResponse:
        return await self.send(calls.create_queues(queues))

    async def update_queues(self, queues: Sequence[Queue]) -> BatchQueueResponse:
        return await self.send(calls.update_queues(queues))

    async def active_queues(self) -> dict[str, list[str]]:
        response = await self.send(calls.active_queues())
        return {pool: active.queues for pool, active in response.active_queues_by_pool.items()}

    # --- jobs -------------------------------------------------------------------------

    async def submit_jobs(
        self, queue: str, job_set_id: str, items: Sequence[jobs.JobSubmitRequestItem]
    ) -> list[str]:
        """Submit jobs (all or none); return their ids in order."""
        response = await self.send(calls.submit_jobs(queue, job_set_id, items))
        return [item.job_id for item in response.job_response_items]

    async def forecast_submission(
        self, queue: str, job_set_id: str, items: Sequence[jobs.JobSubmitRequestItem]
    ) -> list[JobForecastInfo | None]:
        """A dry run: when each job would start if submitted now (nothing is submitted)."""
        response = await self.send(calls.submit_jobs(queue, job_set_id, items, dry_run=True))
        return [item.forecast for item in response.job_response_items]

    async def cancel_jobs(
        self, queue: str, job_set_id: str, job_ids: Sequence[str], reason: str = ""
    ) -> list[str]:
        return (await self.send(calls.cancel_jobs(queue, job_set_id, job_ids, reason))).cancelled_ids

    async def cancel_job_set(
        self, queue: str, job_set_id: str, states: Sequence[jobs.StateName] = (), reason: str = ""
    ) -> list[str]:
        return (await self.send(calls.cancel_job_set(queue, job_set_id, states, reason))).cancelled_ids

    async def reprioritize_jobs(
        self, queue: str, job_set_id: str, job_ids: Sequence[str], new_priority: float
    ) -> dict[str, str]:
        call = calls.reprioritize_jobs(queue, job_set_id, job_ids, new_priority)
        return (await self.send(call)).reprioritization_results

    async def preempt_jobs(
        self, queue: str, job_set_id: str, job_ids: Sequence[str], reason: str = ""
    ) -> list[str]:
        return (await self.send(calls.preempt_jobs(queue, job_set_id, job_ids, reason))).preempted_ids

    async def job_status(self, job_ids: Sequence[str]) -> dict[str, str]:
        return (await self.send(calls.job_status(job_ids))).job_states

    async def job_forecast(self, job_ids: Sequence[str]) -> dict[str, JobForecastInfo]:
        """When queued jobs are expected to start (ids not readable: ``UNKNOWN``)."""
        return (await self.send(calls.job_forecast(job_ids))).forecasts

    async def job_details(
        self,
        job_ids: Sequence[str],
        *,
        expand_spec: bool = False,
        expand_runs: bool = False,
        expand_forecast: bool = False,
    ) -> dict[str, queries.JobDetails]:
        call = calls.job_details(job_ids, expand_spec, expand_runs, expand_forecast)
        return (await self.send(call)).job_details

    async def run_details(self, run_ids: Sequence[str]) -> dict[str, queries.JobRunDetails]:
        return (await self.send(calls.run_details(run_ids))).job_run_details

    async def job_logs(self, request: logs.LogRequest) -> list[logs.LogLine]:
        """Lines of a job's latest run (or ``request.run_id``), as the cluster keeps them."""
        return (await self.send(calls.job_logs(request))).log

    async def job_errors(self, job_ids: Sequence[str]) -> dict[str, str]:
        return (await self.send(calls.job_errors(job_ids))).job_errors

    def job_set_events(
        self, queue: str, job_set_id: str, *, watch: bool = False, from_message_id: str = ""
    ) -> AsyncGenerator[StreamedEvent, None]:
        """The job set's events; with ``watch`` the iterator follows new events until closed."""
        return self.stream(
            calls.job_set_events(queue, job_set_id, watch=watch, from_message_id=from_message_id)
        )

    async def list_jobs(self, request: JobsRequest) -> JobsResponse:
        """A filtered, sorted page of the jobs the caller may read (Lookout's query)."""
        return await self.send(calls.lookout_jobs(request))

    # --- scheduling reports -----------------------------------------------------------

    async def scheduling_report(self) -> SchedulingReport:
        """The last scheduling cycles, newest first."""
        return await self.send(calls.scheduling_report())

    async def queue_report(self, name: str) -> QueueReport:
        """A queue's shares, limits and why each of its scheduling keys waits."""
        return await self.send(calls.queue_report(name))

    async def usage(
        self, since: str = "", until: str = "", by: str = "", resource: str = ""
    ) -> UsageResponse:
        """Resource-seconds used and lost, shares and waits per group (``GET /v1/usage``)."""
        return await self.send(calls.usage(since, until, by, resource))

    async def job_report(self, job_id: str) -> JobReport:
        """Why one job waits, or where and when it was leased."""
        return await self.send(calls.job_report(job_id))
