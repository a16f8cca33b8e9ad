"""``api.Jobs``: job queries over :mod:`armada.services.queries`, as the REST routes answer them.

Each answers only for jobs in queues the caller may read; other ids read exactly as ids
that were never submitted.
"""

from __future__ import annotations

from typing import Any

import msgspec
from armada_client.armada import job_pb2, job_pb2_grpc, submit_pb2

from armada.api.grpc import status
from armada.api.grpc.auth import Caller
from armada.api.grpc.convert import Context, to_proto
from armada.api.grpc.jobs_proto import job_to_proto
from armada.api.services import Services
from armada.model.lifecycle import JobState
from armada.model.queues import QueueVerb
from armada.model.wire.queries import JobDetails, JobRunDetails
from armada.services import queries

_UNKNOWN = submit_pb2.JobState.Value("UNKNOWN")


def job_state(name: str) -> int:
    known = name in submit_pb2.JobState.keys()  # noqa: SIM118 (an enum wrapper, not a dict)
    return int(submit_pb2.JobState.Value(name)) if known else _UNKNOWN


def _details(details: JobDetails) -> job_pb2.JobDetails:
    message = to_proto(
        {**_plain(details, "jobSpec", "jobRuns", "state"), "state": details.state}, job_pb2.JobDetails
    )
    if details.job_spec is not None:
        message.job_spec.CopyFrom(job_to_proto(details.job_spec))
    message.job_runs.extend(_run(run) for run in details.job_runs)
    return message


def _run(run: JobRunDetails) -> job_pb2.JobRunDetails:
    return to_proto(run, job_pb2.JobRunDetails)


def _plain(value: Any, *leave_out: str) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(value)
    return {key: item for key, item in data.items() if key not in leave_out}


class JobsService(job_pb2_grpc.JobsServicer):
    def __init__(self, services: Services) -> None:
        self.services = services
        self.caller = Caller(services.access, services.store)

    @status.unary
    async def GetJobStatus(
        self, request: job_pb2.JobStatusRequest, context: Context
    ) -> job_pb2.JobStatusResponse:
        reads = await self.caller.reads(context)
        job_ids = list(request.job_ids)
        found = await queries.job_states(self.services.store, await reads.jobs(job_ids))
        unknown = JobState.UNKNOWN.value
        return job_pb2.JobStatusResponse(
            job_states={job_id: job_state(found.get(job_id, unknown)) for job_id in job_ids}
        )

    @status.unary
    async def GetJobStatusUsingExternalJobUri(
        self, request: job_pb2.JobStatusUsingExternalJobUriRequest, context: Context
    ) -> job_pb2.JobStatusResponse:
        await self.caller.on_queue(context, request.queue, QueueVerb.WATCH)
        store = self.services.store
        job_ids = await queries.jobs_by_external_uri(
            store, request.queue, request.jobset, request.external_job_uri
        )
        found = await queries.job_states(store, job_ids)
        return job_pb2.JobStatusResponse(job_states={i: job_state(s) for i, s in found.items()})

    @status.unary
    async def GetJobDetails(
        self, request: job_pb2.JobDetailsRequest, context: Context
    ) -> job_pb2.JobDetailsResponse:
        reads = await self.caller.reads(context)
        details = await queries.job_details(
            self.services.store,
            await reads.jobs(list(request.job_ids)),
            expand_spec=request.expand_job_spec,
            expand_runs=request.expand_job_run,
        )
        return job_pb2.JobDetailsResponse(job_details={i: _details(d) for i, d in details.items()})

    @status.unary
    async def GetJobErrors(
        self, request: job_pb2.JobErrorsRequest, context: Context
    ) -> job_pb2.JobErrorsResponse:
        reads = await self.caller.reads(context)
        errors = await queries.job_errors(self.services.store, await reads.jobs(list(request.job_ids)))
        return job_pb2.JobErrorsResponse(job_errors=errors)

    @status.unary
    async def GetJobRunDetails(
        self, request: job_pb2.JobRunDetailsRequest, context: Context
    ) -> job_pb2.JobRunDetailsResponse:
        reads = await self.caller.reads(context)
        runs = await queries.run_details(self.services.store, await reads.runs(list(request.run_ids)))
        return job_pb2.JobRunDetailsResponse(job_run_details={i: _run(r) for i, r in runs.items()})

    @status.unary
    async def GetActiveQueues(
        self, request: job_pb2.GetActiveQueuesRequest, context: Context
    ) -> job_pb2.GetActiveQueuesResponse:
        reads = await self.caller.reads(context)
        by_pool = await queries.active_queues(self.services.store)
        readable = await reads.readable({name for names in by_pool.values() for name in names})
        shown = {pool: [name for name in names if name in readable] for pool, names in by_pool.items()}
        return job_pb2.GetActiveQueuesResponse(
            active_queues_by_pool={
                pool: job_pb2.ActiveQueues(queues=names) for pool, names in shown.items() if names
            }
        )
