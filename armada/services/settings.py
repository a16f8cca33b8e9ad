"""The ``submission`` and ``retention`` settings areas."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from armada.model.durations import setting_seconds
from armada.model.ingress_policy import IngressPolicy
from armada.model.podsecurity import Profile
from armada.model.settings_area import SettingsArea
from armada.scheduling.requirements import Toleration


class SubmissionSettings(SettingsArea):
    min_job_resources: Annotated[
        dict[str, str],
        Meta(description="Smallest request per job and resource; smaller requests are rejected."),
    ] = msgspec.field(default_factory=lambda: {"memory": "1Mi"})
    max_pod_spec_bytes: Annotated[
        int, Meta(ge=1, description="Largest pod spec accepted, measured as compact JSON.")
    ] = 64 * 1024
    allowed_namespaces: Annotated[
        list[str],
        Meta(
            description="Namespaces jobs may run in, for queues that list none of their own "
            "(`allowedNamespaces`); any other namespace is refused at submit."
        ),
    ] = msgspec.field(default_factory=lambda: ["default"])
    reserved_namespaces: Annotated[
        list[str],
        Meta(
            description="Namespaces no queue may ever run jobs in, whatever its allow-list says: "
            "the executors' own and the clusters' system namespaces."
        ),
    ] = msgspec.field(default_factory=lambda: ["armada", "kube-system", "kube-public", "kube-node-lease"])
    pod_security_profile: Annotated[
        Profile,
        Meta(
            description="Pod security profile of jobs of queues that set none (`restricted`, `baseline` "
            "or `privileged`, as Kubernetes' Pod Security Standards; see docs/security.md). "
            "Only callers with `administer_queue_security` may set another on a queue."
        ),
    ] = Profile.BASELINE
    allowed_service_accounts: Annotated[
        list[str],
        Meta(
            description="Service accounts a pod may name (`serviceAccountName`), for queues that list "
            "none of their own; pods naming none run as their namespace's `default` account. Never "
            "list the executor's."
        ),
    ] = msgspec.field(default_factory=lambda: ["default"])
    allow_wildcard_tolerations: Annotated[
        bool,
        Meta(
            description="Accept pods with a wildcard toleration (operator `Exists` and no key): it tolerates "
            "every taint, so the pod may run on control-plane and other reserved nodes. Off: refused at "
            "submit naming the toleration (the executor's `allowWildcardTolerations` checks again)."
        ),
    ] = False
    ingress_policy: IngressPolicy = msgspec.field(default_factory=IngressPolicy)
    max_queued_jobs_per_queue: Annotated[
        int,
        Meta(
            ge=0,
            description="Most jobs waiting (queued) in one queue; a submission that would pass it gets 429 "
            "naming `jobRequestItems`. Checked before the write against a count up to 1 s old plus what this "
            "process let in since, so concurrent submissions (and other replicas' within that second) may "
            "pass it by their own size. 0: no cap.",
        ),
    ] = 1_000_000
    default_active_deadline: Annotated[
        str,
        Meta(
            description="`activeDeadlineSeconds` given to pods that set none, as a duration (e.g. `72h`); "
            "empty or 0: none. `defaultActiveDeadlineByResourceRequest` trumps it."
        ),
    ] = ""
    default_active_deadline_by_resource_request: Annotated[
        dict[str, str],
        Meta(
            description="Per resource (e.g. `nvidia.com/gpu: 336h`), the `activeDeadlineSeconds` of pods "
            "without one whose containers request a non-zero amount of it; the longest match wins."
        ),
    ] = {}
    min_termination_grace_period: Annotated[
        str,
        Meta(
            description="Least `terminationGracePeriodSeconds` a pod may set, as a duration; pods that set "
            "none (or 0) get this one. Empty or 0: no minimum and no default."
        ),
    ] = ""
    max_termination_grace_period: Annotated[
        str,
        Meta(
            description="Most `terminationGracePeriodSeconds` a pod may set, as a duration (cancellation and "
            "preemption wait this long); more is refused at submit. Empty or 0: no maximum."
        ),
    ] = ""
    default_job_tolerations: Annotated[
        list[Toleration], Meta(description="Tolerations added to every submitted pod.")
    ] = []
    default_job_tolerations_by_priority_class: Annotated[
        dict[str, list[Toleration]],
        Meta(description="Tolerations added to the pods of a priority class (after its default is applied)."),
    ] = {}
    default_job_tolerations_by_resource_request: Annotated[
        dict[str, list[Toleration]],
        Meta(
            description="Tolerations added to pods requesting a non-zero amount of a resource (e.g. a GPU)."
        ),
    ] = {}
    default_gang_node_uniformity_label: Annotated[
        str,
        Meta(
            description="Node label whose value all members of a gang must share, for gangs that name "
            "none (`armadaproject.io/gangNodeUniformityLabel`); empty: none."
        ),
    ] = ""

    def __post_init__(self) -> None:
        reserved = sorted(set(self.allowed_namespaces) & set(self.reserved_namespaces))
        if reserved:
            raise ValueError(f"submission.allowedNamespaces lists reserved namespaces: {', '.join(reserved)}")
        minimum = setting_seconds("submission.minTerminationGracePeriod", self.min_termination_grace_period)
        maximum = setting_seconds("submission.maxTerminationGracePeriod", self.max_termination_grace_period)
        if minimum and maximum and minimum > maximum:
            raise ValueError("submission.minTerminationGracePeriod is longer than maxTerminationGracePeriod")
        setting_seconds("submission.defaultActiveDeadline", self.default_active_deadline)
        for resource, deadline in self.default_active_deadline_by_resource_request.items():
            setting_seconds(f"submission.defaultActiveDeadlineByResourceRequest.{resource}", deadline)


class RetentionSettings(SettingsArea):
    """How long finished jobs are kept: expired ones are pruned from the log and every view
    (see docs/operations.md, "Retention and disk"). Queues, retry policies and the fleet's
    settings are never pruned."""

    expire_after: Annotated[
        str,
        Meta(
            description="Age (since its last transition) at which a finished job (succeeded, failed, "
            "cancelled, preempted) is pruned, as a duration (e.g. `336h`); `0` or `off` keeps everything."
        ),
    ] = "336h"
    interval: Annotated[
        str, Meta(description="How often the leader looks for expired jobs to prune, as a duration.")
    ] = "10m"
    batch_size: Annotated[
        int,
        Meta(
            ge=1,
            le=10_000,
            description="Jobs pruned per transaction. On PostgreSQL a batch deletes beside the appends "
            "and holds the append lock only for its last statements (~3 ms); on SQLite its deletes "
            "run at the commit of an append group (25 jobs: ~2.5 ms when idle); docs/operations.md.",
        ),
    ] = 25
    archive_dir: Annotated[
        str,
        Meta(
            description="Directory where each batch is written (gzip JSON Lines, one job a line: spec, "
            "events, runs, final state) and synced before it is deleted; empty: no archive."
        ),
    ] = ""

    @property
    def expire_after_seconds(self) -> float:
        """Seconds after which a finished job expires; 0: never."""
        if self.expire_after.strip().lower() == "off":
            return 0.0
        return setting_seconds("retention.expireAfter", self.expire_after)

    @property
    def interval_seconds(self) -> float:
        return setting_seconds("retention.interval", self.interval)

    def __post_init__(self) -> None:
        if self.expire_after_seconds and self.interval_seconds <= 0:
            raise ValueError("retention.interval must be a positive duration (e.g. 10m)")
