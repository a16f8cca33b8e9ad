"""Our stored :class:`~armada.model.jobs.Job` as upstream's ``api.Job`` message."""

from __future__ import annotations

from datetime import datetime

import structlog
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from google.protobuf.timestamp_pb2 import Timestamp

from armada.api.grpc.podspec import from_json, pod_spec_from_json
from armada.model.errors import InvalidRequest
from armada.model.jobs import Job

log = structlog.get_logger(__name__)


def timestamp(moment: datetime | None) -> Timestamp | None:
    if moment is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def job_to_proto(job: Job) -> submit_pb2.Job:
    try:
        pod_spec = pod_spec_from_json(job.pod_spec, strict=False)
    except InvalidRequest as exc:  # stored before a rule existed: shown without its spec
        log.warning("stored pod spec has no protobuf form", job_id=job.id, error=exc.detail)
        pod_spec = core.PodSpec()
    requirements = core.ResourceRequirements()
    from_json(
        {
            "requests": job.scheduling_resource_requirements.requests,
            "limits": job.scheduling_resource_requirements.limits,
        },
        requirements,
        "schedulingResourceRequirements",
        strict=False,
    )
    return submit_pb2.Job(
        id=job.id,
        client_id=job.client_id,
        job_set_id=job.job_set_id,
        queue=job.queue,
        namespace=job.namespace,
        labels=job.labels,
        annotations=job.annotations,
        owner=job.owner,
        priority=job.priority,
        pod_spec=pod_spec,
        scheduling_resource_requirements=requirements,
        created=timestamp(job.created),
    )
