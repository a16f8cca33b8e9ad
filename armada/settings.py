"""Settings: one struct per area, from defaults, an optional YAML file, and ``ARMADA_*`` variables.

Precedence, lowest first: defaults, the ``--config`` file, environment variables
(``ARMADA_<AREA>_<FIELD>``, e.g. ``ARMADA_DATABASE_URL`` or ``ARMADA_SERVER_PORT``, and
``ARMADA_<AREA>`` as a JSON object: :mod:`armada.settings_env`), then
command-line flags. Defaults run with no file at all. YAML keys are camelCase like upstream.
Every field carries a description (``Meta(description=...)`` or a ``#:`` comment), which
``armada config docs`` (:mod:`armada.cli.settings_docs`) renders to ``docs/configuration.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import yaml
from msgspec import Meta

from armada.auth.settings import AuthSettings
from armada.executor.settings import ExecutorSettings
from armada.model.durations import setting_seconds
from armada.model.ingress_policy import IngressPolicy
from armada.model.podsecurity import Profile
from armada.scheduling.config import SchedulingConfig
from armada.scheduling.requirements import Toleration
from armada.settings_env import EnvironmentSettingsError, from_environment

#: Defaults under ``server.dev``, below the file, the environment and the flags: a laptop has
#: no API server to protect, and upstream's 50 jobs/s per queue would throttle it.
#: ``serve --dev`` runs jobs as local processes: a NodePort service is only the job's own port
#: on this host (nothing is opened), so the getting-started examples' NodePort services work.
_DEV_SERVICE_TYPES = {"ingressPolicy": {"allowedServiceTypes": ["NodePort", "Headless"]}}
DEV_DEFAULTS: dict[str, dict[str, Any]] = {
    "submission": _DEV_SERVICE_TYPES,
    "executor": _DEV_SERVICE_TYPES,
    "scheduling": {
        "maximumSchedulingRate": 1_000_000.0,
        "maximumSchedulingBurst": 1_000_000,
        "maximumPerQueueSchedulingRate": 1_000_000.0,
        "maximumPerQueueSchedulingBurst": 1_000_000,
    },
}


class SettingsError(ValueError):
    """Configuration that cannot be used; the message names the key."""


class _Area(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Base of every settings area."""


class DatabaseSettings(_Area):
    url: Annotated[
        str,
        Meta(
            description="SQLAlchemy URL of the database. The default is an embedded SQLite file; "
            "use postgresql+psycopg://user@host:5432/db for PostgreSQL."
        ),
    ] = "sqlite:///armada.db"
    pool_size: Annotated[int, Meta(ge=1, description="Connections kept open to PostgreSQL.")] = 10


class ServerSettings(_Area):
    host: Annotated[str, Meta(description="Address the HTTP server binds to.")] = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535, description="Port the HTTP server listens on.")] = 8080
    dev: Annotated[
        bool,
        Meta(
            description="Development mode: also run one in-process executor with the local process "
            "backend, log one line per job state change, and default the scheduling rate limits to off."
        ),
    ] = False
    max_request_bytes: Annotated[
        int, Meta(ge=1024, description="Largest request body accepted; larger ones get 413.")
    ] = 16 * 1024 * 1024
    shutdown_timeout: Annotated[
        int, Meta(ge=0, description="Seconds to let in-flight requests finish on SIGTERM.")
    ] = 10
    keep_alive_timeout: Annotated[
        int, Meta(ge=1, description="Seconds an idle keep-alive connection is kept open.")
    ] = 75
    tls_cert: Annotated[
        str, Meta(description="PEM certificate (chain) to serve HTTPS with; empty serves plain HTTP.")
    ] = ""
    tls_key: Annotated[str, Meta(description="PEM private key of `tlsCert`.")] = ""
    cors_allow_origins: Annotated[
        list[str],
        Meta(description="Browser origins allowed to call the API (CORS), e.g. the UI's; `*` allows any."),
    ] = []
    forwarded_allow_ips: Annotated[
        list[str],
        Meta(
            description="Addresses (or CIDR ranges) of reverse proxies trusted to give the client's address "
            "in `X-Forwarded-For`; behind an Ingress list its pods' range, or every client shares the "
            "proxy's address in the per-client limits (failed logins, anonymous streams). Empty: "
            "127.0.0.1 only.",
        ),
    ] = []
    max_streams_per_caller: Annotated[
        int,
        Meta(
            ge=1,
            description="Event streams (job-set events, Lookout's change feed) one caller may hold open "
            "at once, per server process; more get 429. Anonymous callers count per client address.",
        ),
    ] = 100
    workers: Annotated[
        int,
        Meta(
            ge=1,
            description="Server processes sharing the port, each a replica (one schedules); "
            "one per core. PostgreSQL only.",
        ),
    ] = 1

    grpc_port: Annotated[
        int,
        Meta(
            ge=0,
            le=65535,
            description="Port of the gRPC API (upstream's services for armada-client, armadactl, "
            "the Airflow operator), on `host` with the same TLS; 0 turns it off.",
        ),
    ] = 50051

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("server: set both tlsCert and tlsKey, or neither")


class LoggingSettings(_Area):
    format: Annotated[
        Literal["auto", "console", "json"],
        Meta(description="Log format: console for people, json for machines, auto picks by terminal."),
    ] = "auto"
    level: Annotated[
        Literal["debug", "info", "warning", "error"], Meta(description="Lowest level logged.")
    ] = "info"


class SchedulerServiceSettings(_Area):
    """The scheduler *service*: its loop, leases and executor bookkeeping (the algorithm's
    settings are the ``scheduling`` area)."""

    enabled: Annotated[
        bool,
        Meta(description="Run the scheduling loop in this replica (off: serve the API and executors only)."),
    ] = True
    cycle_period: Annotated[
        float, Meta(gt=0, description="Seconds between scheduling cycles when nothing wakes the scheduler.")
    ] = 1.0
    min_cycle_interval: Annotated[
        float,
        Meta(
            ge=0,
            description="Least seconds between the starts of two cycles, so a burst of submissions "
            "is scheduled together.",
        ),
    ] = 0.05
    executor_timeout: Annotated[
        float, Meta(gt=0, description="Seconds of executor silence after which its runs expire and requeue.")
    ] = 60.0
    max_retries: Annotated[
        int, Meta(ge=0, description="Requeues (lease returned or expired, node lost) before a job fails.")
    ] = 3
    avoid_node_labels_on_retry: Annotated[
        list[str],
        Meta(
            description="Node labels whose values a requeued job avoids: the values of the node its "
            "run failed on (lease returned after the pod started, expired, node lost), added to "
            "the job's node affinity when some other node could still hold it. The default avoids "
            "the node itself; add e.g. a rack label to avoid its rack; empty: retries may land anywhere."
        ),
    ] = msgspec.field(default_factory=lambda: ["kubernetes.io/hostname"])
    max_unacknowledged_leases_per_executor: Annotated[
        int,
        Meta(
            ge=1,
            description="Most runs leased to one executor and not yet reported back by it; "
            "an executor at the limit gets no new leases until it catches up. One scheduling "
            "cycle leases at most this many per executor taking leases (a bounded write).",
        ),
    ] = 2500
    heartbeat_record_interval: Annotated[
        float, Meta(gt=0, description="Seconds between executor heartbeats recorded in the event log.")
    ] = 5.0
    leader_retry_interval: Annotated[
        float, Meta(gt=0, description="Seconds between attempts of a standby replica to become the leader.")
    ] = 1.0
    log_wait_seconds: Annotated[
        float,
        Meta(
            gt=0,
            le=300,
            description="Longest a log read (``/v1/binoculars/log``) waits for the executor that ran "
            "the job to answer before it fails with 503.",
        ),
    ] = 10.0
    max_log_reads_per_caller: Annotated[
        int,
        Meta(
            ge=1,
            description="Log reads one caller (user; anonymous callers per address) may have waiting "
            "on this replica at once; more are refused with 429 and `Retry-After`.",
        ),
    ] = 2
    log_reads_per_second_per_caller: Annotated[
        float,
        Meta(
            gt=0,
            description="Log reads one caller may start per second on this replica, on average "
            "(bursts: `logReadBurstPerCaller`); faster ones are refused with 429 and `Retry-After`. "
            "Lookout asks every 2 s per open log, `armada logs --follow` every second.",
        ),
    ] = 2.0
    log_read_burst_per_caller: Annotated[
        int,
        Meta(
            ge=1,
            description="Log reads one caller may start at once before `logReadsPerSecondPerCaller` applies.",
        ),
    ] = 10
    max_log_reads_per_executor: Annotated[
        int,
        Meta(
            ge=1,
            description="Log reads waiting on this replica for one executor at once, whoever asked; "
            "more are refused with 429 and `Retry-After` (the executor bounds its own, "
            "`executor.maxLogReads`).",
        ),
    ] = 4
    max_log_bytes: Annotated[
        int,
        Meta(
            ge=1024,
            le=4 * 1024 * 1024,
            description="Most bytes of log lines (as encoded JSON) in one answer: without `limitBytes` "
            "the newest lines that fit are sent; a larger `limitBytes` is refused (400). Each read "
            "costs the executor and the server ~30 ms of CPU per MiB (docs/performance.md).",
        ),
    ] = 256 * 1024
    max_log_lines: Annotated[
        int,
        Meta(
            ge=1,
            description="Most lines in one answer: a request without `tailLines` gets at most the "
            "newest this many; a larger `tailLines` is refused (400).",
        ),
    ] = 10_000


class SubmissionSettings(_Area):
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


class RetentionSettings(_Area):
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
            description="Jobs pruned per transaction: each batch holds the append lock while it deletes, "
            "so submissions wait for at most one batch (25: ~12 ms on PostgreSQL, ~450 jobs/s; "
            "docs/operations.md).",
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


class Settings(_Area):
    """All of armada's settings, one struct per area."""

    database: DatabaseSettings = msgspec.field(default_factory=DatabaseSettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    logging: LoggingSettings = msgspec.field(default_factory=LoggingSettings)
    scheduler: SchedulerServiceSettings = msgspec.field(default_factory=SchedulerServiceSettings)
    scheduling: SchedulingConfig = msgspec.field(default_factory=SchedulingConfig)
    submission: SubmissionSettings = msgspec.field(default_factory=SubmissionSettings)
    executor: ExecutorSettings = msgspec.field(default_factory=ExecutorSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)
    retention: RetentionSettings = msgspec.field(default_factory=RetentionSettings)

    def __post_init__(self) -> None:
        unknown = sorted(
            set(self.submission.default_job_tolerations_by_priority_class)
            - set(self.scheduling.priority_classes)
        )
        if unknown:
            known = ", ".join(sorted(self.scheduling.priority_classes))
            raise ValueError(
                f"submission.defaultJobTolerationsByPriorityClass names unknown priority classes "
                f"{', '.join(unknown)}; known: {known}"
            )


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _dev_mode(data: Mapping[str, Any]) -> bool:
    """Whether the merged settings ask for development mode (an invalid value is reported
    by the conversion of the whole)."""
    server = data.get("server")
    if not isinstance(server, Mapping):
        return False
    try:
        return msgspec.convert(server.get("dev", False), bool, strict=False)
    except msgspec.ValidationError:
        return False


def load_settings(
    config_file: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Build :class:`Settings` from the file, the environment and explicit overrides."""
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            loaded = yaml.safe_load(config_file.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise SettingsError(f"cannot read {config_file}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise SettingsError(f"{config_file}: the top level must be a mapping of areas")
        data = loaded
    try:
        data = _merge(data, from_environment(Settings, os.environ if env is None else env))
    except EnvironmentSettingsError as exc:
        raise SettingsError(str(exc)) from exc
    data = _merge(
        data, {k: {f: v for f, v in area.items() if v is not None} for k, area in (overrides or {}).items()}
    )
    if _dev_mode(data):
        data = _merge(DEV_DEFAULTS, data)
    try:
        return msgspec.convert(data, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid configuration: {exc}") from exc
