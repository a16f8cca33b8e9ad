"""Our stored :class:`~armada.model.jobs.Job` as upstream's ``api.Job`` message."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any, overload

import msgspec
import structlog
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from google.protobuf.timestamp_pb2 import Timestamp

from armada.api.grpc import protowire
from armada.api.grpc.convert import to_proto
from armada.api.grpc.podspec import from_json, pod_spec_from_json
from armada.model.errors import InvalidRequest
from armada.model.jobs import Job

log = structlog.get_logger(__name__)


@overload
def timestamp(moment: datetime) -> Timestamp: ...
@overload
def timestamp(moment: datetime | None) -> Timestamp | None: ...
def timestamp(moment: datetime | None) -> Timestamp | None:
    if moment is None:
        return None
    # Our times are UTC-aware and after 1970; this is several times faster than FromDatetime.
    return Timestamp(seconds=int(moment.timestamp()), nanos=moment.microsecond * 1000)


@lru_cache(maxsize=256)
def timestamp_field(number: int, moment: datetime) -> bytes:
    """Field ``number`` holding ``moment`` as a serialized ``Timestamp``: the events of one
    request share their moment (a submission's jobs and their ``queued`` events), so a
    stream mostly finds it here (a lookup costs a tenth of building it)."""
    return protowire.field(number, timestamp(moment).SerializeToString())


_encode = msgspec.json.Encoder().encode
_decode_object = msgspec.json.Decoder(dict[str, Any]).decode


_CREATED = submit_pb2.Job.DESCRIPTOR.fields_by_name["created"].number
_POD_SPEC = submit_pb2.Job.DESCRIPTOR.fields_by_name["pod_spec"].number
_REQUIREMENTS = submit_pb2.Job.DESCRIPTOR.fields_by_name["scheduling_resource_requirements"].number


@lru_cache(maxsize=1024)
def _pod_spec_field(encoded: bytes) -> bytes:
    """Jobs of one job set mostly share their pod spec: each distinct one is converted and
    serialized once, as ``Job.pod_spec`` ready to splice into a serialized job.

    ``encoded`` may be a stored event's raw JSON (:mod:`armada.api.grpc.stored`), not yet
    checked to be an object: one that is not is shown empty, as one with no protobuf form."""
    try:
        spec = pod_spec_from_json(_decode_object(encoded), strict=False)
    except (InvalidRequest, msgspec.DecodeError) as exc:  # stored before a rule existed
        log.warning("stored pod spec has no protobuf form", error=getattr(exc, "detail", str(exc)))
        spec = core.PodSpec()
    return protowire.field(_POD_SPEC, spec.SerializeToString())


@lru_cache(maxsize=1024)
def _requirements_field(encoded: bytes) -> bytes:
    requirements = core.ResourceRequirements()
    try:
        from_json(_decode_object(encoded), requirements, "schedulingResourceRequirements", strict=False)
    except (InvalidRequest, msgspec.DecodeError) as exc:
        log.warning("stored requirements have no protobuf form", error=getattr(exc, "detail", str(exc)))
        requirements = core.ResourceRequirements()
    return protowire.field(_REQUIREMENTS, requirements.SerializeToString())


def job_to_bytes(job: Job) -> bytes:
    """The serialized ``api.Job``: its own fields, then the cached pod spec and requirements
    (keyed by their JSON: a :class:`~armada.api.grpc.stored.RawSpecJob`'s encodes as stored)."""
    own = submit_pb2.Job(
        id=job.id,
        client_id=job.client_id,
        job_set_id=job.job_set_id,
        queue=job.queue,
        namespace=job.namespace,
        labels=job.labels,
        annotations=job.annotations,
        owner=job.owner,
        priority=job.priority,
        services=[to_proto(service, submit_pb2.ServiceConfig) for service in job.services],
        ingress=[to_proto(config, submit_pb2.IngressConfig) for config in job.ingress],
    ).SerializeToString()
    created = timestamp_field(_CREATED, job.created) if job.created is not None else b""
    pod_spec = _pod_spec_field(_encode(job.pod_spec))
    return own + created + pod_spec + _requirements_field(_encode(job.scheduling_resource_requirements))


def job_to_proto(job: Job) -> submit_pb2.Job:
    return submit_pb2.Job.FromString(job_to_bytes(job))
