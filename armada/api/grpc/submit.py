"""``api.Submit``: job commands (and the queue methods), over the REST routes' services."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import msgspec
from armada_client.armada import health_pb2, submit_pb2, submit_pb2_grpc
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from google.protobuf import empty_pb2

from armada.api.grpc import status
from armada.api.grpc.auth import Caller
from armada.api.grpc.convert import Context, to_dict, wire
from armada.api.grpc.podspec import pod_spec_to_json
from armada.api.grpc.queues import EMPTY, QueueMethods
from armada.api.services import Services
from armada.model.queues import QueueVerb
from armada.model.wire.jobs import (
    JobCancelRequest,
    JobPreemptRequest,
    JobReprioritizeRequest,
    JobSetCancelRequest,
    JobSubmitRequest,
)
from armada.services import job_actions
from armada.services.submission import submit_jobs

SERVING = health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


@lru_cache(maxsize=256)
def _pod_spec_json(serialized: bytes) -> bytes:
    """Items of one request mostly share their pod spec: each distinct one is converted once."""
    return msgspec.json.encode(pod_spec_to_json(core.PodSpec.FromString(serialized)))


def _pod_spec(spec: core.PodSpec) -> dict[str, Any]:
    """A fresh JSON pod spec (never shared between jobs)."""
    serialized = spec.SerializeToString(deterministic=True)
    data: dict[str, Any] = msgspec.json.decode(_pod_spec_json(serialized))
    return data


_POD_SPECS = {"pod_spec", "pod_specs"}


def _item_fields(item: submit_pb2.JobSubmitRequestItem) -> dict[str, Any]:
    """The item's set fields but its pod specs, by JSON name (what ``to_dict`` gives, without
    walking the pod specs it would throw away)."""
    data: dict[str, Any] = {}
    for fd, value in item.ListFields():
        if fd.name in _POD_SPECS:
            continue
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            data[fd.json_name] = dict(value)
        elif fd.message_type is not None:
            data[fd.json_name] = [to_dict(entry) for entry in value]
        else:
            data[fd.json_name] = value
    return data


def submit_request(message: submit_pb2.JobSubmitRequest) -> JobSubmitRequest:
    """The REST body this request stands for (pod specs in their JSON form)."""
    items = []
    for item in message.job_request_items:
        data = _item_fields(item)
        if item.HasField("pod_spec"):
            data["podSpec"] = _pod_spec(item.pod_spec)
        if item.pod_specs:
            data["podSpecs"] = [_pod_spec(spec) for spec in item.pod_specs]
        items.append(data)
    body = {"queue": message.queue, "jobSetId": message.job_set_id, "jobRequestItems": items}
    return wire(body, JobSubmitRequest)


class SubmitService(QueueMethods, submit_pb2_grpc.SubmitServicer):
    def __init__(self, services: Services) -> None:
        self.services = services
        self.caller = Caller(services.access, services.store)

    @status.unary
    async def SubmitJobs(
        self, request: submit_pb2.JobSubmitRequest, context: Context
    ) -> submit_pb2.JobSubmitResponse:
        identity = await self.caller.on_queue(context, request.queue, QueueVerb.SUBMIT)
        body = submit_request(request)
        response = await submit_jobs(
            self.services.store,
            body,
            self.services.submission_rules,
            identity.name,
            queued_cap=self.services.queued_cap,
        )
        items = [
            submit_pb2.JobSubmitResponseItem(job_id=item.job_id, error=item.error)
            for item in response.job_response_items
        ]
        return submit_pb2.JobSubmitResponse(job_response_items=items)

    @status.unary
    async def CancelJobs(
        self, request: submit_pb2.JobCancelRequest, context: Context
    ) -> submit_pb2.CancellationResult:
        identity = await self.caller.on_queue(context, request.queue, QueueVerb.CANCEL)
        data = wire(to_dict(request), JobCancelRequest)
        job_ids = [data.job_id, *data.job_ids] if data.job_id else data.job_ids
        cancelled = await job_actions.cancel_jobs(
            self.services.store, data.queue, data.job_set_id, job_ids, reason=data.reason, user=identity.name
        )
        return submit_pb2.CancellationResult(cancelled_ids=cancelled)

    @status.unary
    async def CancelJobSet(
        self, request: submit_pb2.JobSetCancelRequest, context: Context
    ) -> empty_pb2.Empty:
        identity = await self.caller.on_queue(context, request.queue, QueueVerb.CANCEL)
        data = wire(to_dict(request), JobSetCancelRequest)
        states = data.filter.states if data.filter else []
        await job_actions.cancel_job_set(
            self.services.store, data.queue, data.job_set_id, states, reason=data.reason, user=identity.name
        )
        return EMPTY

    @status.unary
    async def ReprioritizeJobs(
        self, request: submit_pb2.JobReprioritizeRequest, context: Context
    ) -> submit_pb2.JobReprioritizeResponse:
        identity = await self.caller.on_queue(context, request.queue, QueueVerb.REPRIORITIZE)
        data = wire({"newPriority": 0.0, **to_dict(request)}, JobReprioritizeRequest)
        results = await job_actions.reprioritize_jobs(
            self.services.store,
            data.queue,
            data.job_set_id,
            data.job_ids,
            new_priority=data.new_priority,
            user=identity.name,
        )
        return submit_pb2.JobReprioritizeResponse(reprioritization_results=results)

    @status.unary
    async def PreemptJobs(
        self, request: submit_pb2.JobPreemptRequest, context: Context
    ) -> submit_pb2.PreemptionResult:
        identity = await self.caller.on_queue(context, request.queue, QueueVerb.PREEMPT)
        data = wire({"jobIds": [], **to_dict(request)}, JobPreemptRequest)
        preempted = await job_actions.preempt_jobs(
            self.services.store,
            data.queue,
            data.job_set_id,
            data.job_ids,
            reason=data.reason,
            user=identity.name,
            priority_classes=self.services.scheduling.priority_classes,
        )
        return submit_pb2.PreemptionResult(preemption_results=dict.fromkeys(preempted, ""))

    async def Health(self, request: empty_pb2.Empty, context: Context) -> health_pb2.HealthCheckResponse:
        return SERVING
