"""Jobs as submitted and stored: upstream's ``apiJob`` shape with a raw pod spec.

The pod spec stays a plain JSON object so that every Kubernetes field a user sets reaches
the pod unchanged; the fields Armada itself interprets are read through typed views
(see ``armada.model.podspec``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from armada.model.ingress import IngressConfig, ServiceConfig

GANG_ID_ANNOTATION = "armadaproject.io/gangId"
GANG_CARDINALITY_ANNOTATION = "armadaproject.io/gangCardinality"
GANG_NODE_UNIFORMITY_ANNOTATION = "armadaproject.io/gangNodeUniformityLabel"
RETRY_ON_PREEMPTION_ANNOTATION = "armadaproject.io/retryOnPreemption"
#: Where upstream (and we) keep a job's ``externalJobUri`` (the Airflow operator sets it).
EXTERNAL_JOB_URI_ANNOTATION = "armadaproject.io/externalJobUri"
#: Annotations the executor adds to every pod of a job (they count against Kubernetes' limit).
JOB_SET_ANNOTATION = "armada_jobset_id"
OWNER_ANNOTATION = "armada_owner"
#: The names a submission's ``scheduler`` field may take: empty means this scheduler.
SCHEDULER_NAMES = ("", "armada")

DEFAULT_PRIORITY_CLASS = "armada-default"
PREEMPTIBLE_PRIORITY_CLASS = "armada-preemptible"


class ResourceRequirements(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Kubernetes ``ResourceRequirements``: quantities as strings, e.g. ``{"cpu": "100m"}``."""

    requests: dict[str, str] = {}
    limits: dict[str, str] = {}


class Job(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """A job as accepted by the server; kept forever in the ``submitted`` event.

    New fields must get defaults so that events stored by older versions still decode.
    """

    id: str
    queue: str
    job_set_id: str
    namespace: str
    owner: str = ""
    client_id: str = ""
    priority: float = 0.0
    priority_class_name: str = DEFAULT_PRIORITY_CLASS
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    pod_spec: dict[str, Any] = {}
    created: datetime | None = None
    #: Sum of the containers' requests, normalised (what the scheduler reserves).
    scheduling_resource_requirements: ResourceRequirements = msgspec.field(
        default_factory=ResourceRequirements
    )
    #: Ports the job exposes (upstream's ``services`` and ``ingress``).
    services: list[ServiceConfig] = []
    ingress: list[IngressConfig] = []

    @property
    def gang_id(self) -> str:
        return self.annotations.get(GANG_ID_ANNOTATION, "")

    @property
    def gang_cardinality(self) -> int:
        value = self.annotations.get(GANG_CARDINALITY_ANNOTATION, "")
        return int(value) if value.isdigit() else (1 if not self.gang_id else 0)


#: Decode a job as stored (the ``submitted`` event's job, the ``jobs`` view's spec column).
decode_job = msgspec.json.Decoder(Job).decode
