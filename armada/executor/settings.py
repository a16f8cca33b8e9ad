"""Executor settings: one plain struct with defaults, loaded by the global settings loader.

Durations are seconds (floats). Quantities are Kubernetes quantity strings.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from armada.executor.categories import ErrorCategoriesSettings
from armada.model.ingress_policy import IngressPolicy
from armada.model.metadata import check_label_value
from armada.model.podsecurity import Profile

BackendName = Literal["kubernetes", "process", "fake"]


class FakeNodeTemplate(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A group of identical simulated nodes (one entry of ``--fake-nodes-file``)."""

    #: How many nodes to make from this template.
    count: int = 1
    #: Node names are ``<prefix>-<n>``; empty means ``<clusterId>-node``.
    name_prefix: str = ""
    #: Allocatable resources, e.g. ``{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}``.
    allocatable: dict[str, str] = {}
    #: Node labels (``kubernetes.io/hostname`` is always set to the node name).
    labels: dict[str, str] = {}
    #: Node taints, each ``{"key", "value", "effect"}``.
    taints: list[dict[str, str]] = []


class FakeSettings(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Simulated cluster: runs take the time of the ``sleep N`` in their command."""

    #: Node templates; when empty, ``nodes`` nodes of ``node_cpu``/``node_memory`` are made.
    node_templates: list[FakeNodeTemplate] = []
    #: Number of identical nodes when no templates are given.
    nodes: int = 5000
    #: CPU of each identical node.
    node_cpu: str = "64"
    #: Memory of each identical node.
    node_memory: str = "512Gi"
    #: Run time of a job whose command has no ``sleep N``.
    default_run_seconds: float = 1.0
    #: Simulated seconds per real second (e.g. 60 makes ``sleep 60`` last one second).
    speed: float = 1.0


class ProcessSettings(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Local cluster of one node: jobs run as subprocesses of this host."""

    #: CPU offered to the scheduler; empty means this host's CPU count.
    cpu: str = ""
    #: Memory offered to the scheduler; empty means this host's physical memory.
    memory: str = ""
    #: Node name; empty means this host's name.
    node_name: str = ""
    #: Where run state (pid, output, exit code) is kept so that a restarted executor finds
    #: its processes again; empty means ``<tmp>/armada-executor-<clusterId>``.
    state_dir: str = ""
    #: Seconds between SIGTERM and SIGKILL to a killed run's process group.
    kill_grace_seconds: float = 5.0
    #: Seconds a finished run's output is kept for log reads (``armada logs``, Lookout),
    #: counted from when its result was delivered.
    log_retention_seconds: float = 24 * 3600.0
    #: Most bytes of output kept per run: once half is written it is rotated, so the
    #: newest half to whole of it is kept, on disk and for log reads.
    log_max_bytes: int = 10 * 1024 * 1024
    #: Accept that everyone who can submit jobs to the server runs code on this host (as the
    #: executor's user, or ``runAsUser``): the process backend isolates nothing else. Without
    #: it the backend refuses to start for a server reachable from other machines (a
    #: ``server.host`` of ``serve --dev``, or a ``serverUrl`` host, other than loopback).
    allow_remote_submitters: bool = False
    #: Run jobs as this user (name or uid; its primary group only, a clean environment)
    #: instead of the executor's user, which must be root; the executor refuses to start if
    #: the user could read its settings, database or keys. Jobs sharing the user can still
    #: reach each other's processes and working directories. Empty: the executor's user.
    run_as_user: str = ""


class IngressSettings(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """How the Ingresses of jobs' ``ingress`` configs are made (kubernetes backend; the fake
    backend names its simulated hosts the same way)."""

    #: Domain under which job hosts are made: ``<container>-<port>-armada-<jobId>-0.<namespace>.<suffix>``
    #: (a wildcard DNS record ``*.<namespace>.<suffix>`` should point at the ingress controller).
    hostname_suffix: str = ""
    #: ``ingressClassName`` of every Ingress; empty: the cluster's default class.
    ingress_class: str = ""
    #: TLS Secret (in the job's namespace) of ingresses with ``tlsEnabled`` and no ``certName``;
    #: empty: none named, the ingress controller's default certificate.
    tls_secret: str = ""
    #: Annotations added to every Ingress; they win over a job's own (which
    #: ``ingressPolicy.allowedAnnotations`` limits).
    annotations: dict[str, str] = {}


class KubernetesSettings(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Real cluster, reached with kubernetes-asyncio."""

    #: Kubeconfig file; empty means in-cluster config (then ``~/.kube/config``).
    kubeconfig: str = ""
    #: Kubeconfig context; empty means the current context.
    context: str = ""
    #: Seconds between full relists of this executor's pods, a safety net for anything a
    #: watch missed (watches are renewed from their last version, and a 410 relists at once).
    #: Each relist of 100,000 pods costs seconds of CPU: keep it long on big clusters.
    resync_seconds: float = 600.0
    #: No longer used: nodes and the pods on them are followed by watches (informers).
    node_refresh_seconds: float = 10.0
    #: Seconds between checks for stuck pods and finished pods to delete.
    housekeeping_seconds: float = 10.0
    #: Return the lease of a pod that is still unscheduled after this long.
    unschedulable_deadline_seconds: float = 300.0
    #: Return the lease of a pod still pulling its image (back-off) after this long.
    image_pull_deadline_seconds: float = 900.0
    #: Return the lease of a pod pending for any other reason after this long.
    pending_deadline_seconds: float = 900.0
    #: A pod bound to a node but not started after this long has its Warning Events read at
    #: each housekeeping: a missing Secret/ConfigMap volume or an image that does not exist
    #: returns its lease at once, with the Event's message, not after the deadlines above.
    pending_events_after_seconds: float = 10.0
    #: Grace period given to pods deleted on cancel or preempt; unset means the pod's own
    #: ``terminationGracePeriodSeconds``.
    pod_kill_grace_seconds: int | None = None
    #: No longer used: pods are pinned by node *name* (``nodeAffinity`` ``matchFields``
    #: ``metadata.name``), which needs no label; kept so that older config files load.
    node_id_label: str = "kubernetes.io/hostname"
    #: Timeout of one Kubernetes API call (a watch: of its connect and of each read).
    request_timeout_seconds: float = 30.0
    #: Attempts of an API call answered 429, 5xx or not at all, before giving up.
    api_attempts: int = 5
    #: First retry delay of such a call (doubles, with jitter); ``Retry-After`` wins.
    retry_initial_seconds: float = 0.5
    #: Largest retry delay of such a call.
    retry_max_seconds: float = 30.0
    #: Most pod creations in flight at once (a burst of leases must not flood the API).
    max_concurrent_creates: int = 20
    #: Items per page of a list call (``limit``/``continue``).
    list_page_size: int = 500
    #: Longest a watch is kept open before it is renewed from its last resource version.
    watch_seconds: float = 300.0
    #: After a killed pod's grace period, how long it may stay Terminating (finalizers, an
    #: unreachable node) before it is force-deleted and reported gone.
    terminating_deadline_seconds: float = 60.0
    #: Pods on a node that stopped reporting (NotReady or Unknown: crashed, or only cut off
    #: from the API server, its containers still running). ``fence``: such a pod is never
    #: force-deleted and its run ends only when the node is deleted or its kubelet confirms
    #: the containers stopped, so a job never runs twice at once, but its retry waits (until
    #: an operator deletes a dead node). ``retry``: a pod evicted from such a node returns its
    #: lease at once and a killed one is force-deleted after ``terminatingDeadlineSeconds``;
    #: the retry may run beside the old container if the node was only cut off.
    lost_node_pods: Literal["fence", "retry"] = "fence"
    #: A node NotReady for less than this is still reported ready (its pods usually keep
    #: running; Kubernetes itself waits 5 minutes before evicting them).
    node_not_ready_grace_seconds: float = 300.0
    #: How often kubeconfig exec-plugin, GCP and OIDC tokens are checked (and renewed when
    #: they expire within five minutes).
    credential_refresh_seconds: float = 60.0
    #: Longest wait for a failed container's log tail (read off the watch path).
    log_timeout_seconds: float = 5.0


class ExecutorSettings(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Everything an ``armada executor`` needs; one executor serves one cluster."""

    #: Base URL of the Armada server, e.g. ``https://armada.example.com``.
    server_url: str = "http://127.0.0.1:8080"
    #: Cluster id, also the executor id: unique per executor. A Kubernetes label value (1-63
    #: letters, digits, '-', '_' or '.', starting and ending with a letter or digit): every pod
    #: carries it as one, and every list of the executor's pods selects on it.
    cluster_id: str = "local"
    #: Pool of this cluster's nodes that carry no ``nodePoolLabel`` label.
    pool: str = "default"
    #: Node label naming a node's pool, so one cluster can serve several pools (A100 and H100
    #: nodes, a CPU farm) and one pool can span clusters; empty: every node is in ``pool``.
    node_pool_label: str = "armadaproject.io/pool"
    #: Nodes with the ``armadaproject.io/reservation`` taint go to the reserved sub-pool
    #: ``<pool><suffix>`` (e.g. ``gpu-reserved``); empty: reserved nodes stay in their pool.
    reserved_node_pool_suffix: str = "-reserved"
    #: Bearer token sent to the server; empty sends none.
    token: str = ""
    #: CA bundle to verify the server's TLS certificate; empty uses the system store.
    ca_cert: str = ""
    #: Which cluster backend runs the jobs.
    backend: BackendName = "process"
    #: How long the server may hold a lease call with nothing new (long poll); also
    #: bounds the time between heartbeats.
    lease_wait_seconds: float = 1.5
    #: Least time between two lease calls that brought nothing new.
    idle_lease_interval_seconds: float = 1.0
    #: Least time between two lease calls while busy: each call reports every held run,
    #: so calling back-to-back would spend the server's time re-reading the same list.
    min_lease_interval_seconds: float = 0.25
    #: Most new leases asked for in one call.
    max_new_leases: int = 2500
    #: Most runs held in the ``leased`` phase (accepted, not yet in the cluster).
    max_leased_runs: int = 5000
    #: Timeout of one HTTP call to the server.
    request_timeout_seconds: float = 30.0
    #: Events sent in one ``/v1/executor/events`` call at most.
    event_batch_size: int = 2000
    #: Event reports under way at once (a run's events all share one of these lanes, so
    #: they stay in order). More than 1 overlaps the reports' round trips: for a link to
    #: the server slow next to the server's commit. On a busy server the reports, sharing
    #: a commit, hold its append lock longer, and submissions and leases wait for them.
    event_reports_in_flight: int = 1
    #: Events buffered while the server is unreachable before backends are slowed down
    #: (events are never dropped).
    max_buffered_events: int = 100_000
    #: Log reads worked on at once (each holds up to an answer's lines in memory); a log
    #: request past it is answered "busy" at once, and its user told to retry (429).
    max_log_reads: int = 4
    #: First retry delay of a failed call; doubles per failure (with jitter).
    retry_initial_seconds: float = 0.2
    #: Largest retry delay.
    retry_max_seconds: float = 15.0
    #: On shutdown, how long to keep trying to deliver buffered events.
    shutdown_flush_seconds: float = 10.0
    #: Kill every held run on shutdown; otherwise runs keep going and a restarted
    #: executor adopts them again.
    kill_runs_on_shutdown: bool = False
    #: Seconds a finished pod/process directory is kept after its result was delivered.
    finished_run_retention_seconds: float = 300.0
    #: Namespaces this executor creates pods in. A lease for any other namespace is reported
    #: back as failed and nothing is created (the server should never send one; this is the
    #: second check). The executor's own namespace is refused whatever this lists. ``*``
    #: allows any other (the in-process executor of ``serve --dev``: local processes have no
    #: namespaces, and the server already held the job to its queue's list).
    allowed_namespaces: list[str] = msgspec.field(default_factory=lambda: ["default"])
    #: Pod security profile (``restricted``, ``baseline`` or ``privileged``) every lease is
    #: checked against before anything is created; a lease breaking it is reported failed.
    pod_security_profile: Profile = Profile.BASELINE
    #: Service accounts a leased pod may name (pods naming none use their namespace's
    #: ``default``); never list the executor's own.
    allowed_service_accounts: list[str] = msgspec.field(default_factory=lambda: ["default"])
    #: Run pods with a wildcard toleration (operator ``Exists``, no key: every taint tolerated,
    #: control-plane nodes included); off: such a lease is reported failed. Turn it on if the
    #: server's default tolerations hold one.
    allow_wildcard_tolerations: bool = False
    #: What jobs may set on the Services and Ingresses that expose them, checked before any is
    #: created (the server's ``submission.ingressPolicy`` checked it at submit).
    ingress_policy: IngressPolicy = msgspec.field(default_factory=IngressPolicy)
    #: Namespace the executor itself runs in, never given to jobs; empty: read from the pod's
    #: service account mount (``/var/run/secrets/kubernetes.io/serviceaccount/namespace``)
    #: when there is one.
    own_namespace: str = ""
    #: Failure categories reported with failed runs, for the server's retry policies.
    error_categories: ErrorCategoriesSettings = msgspec.field(default_factory=ErrorCategoriesSettings)
    #: Options of the ``fake`` backend.
    fake: FakeSettings = msgspec.field(default_factory=FakeSettings)
    #: Options of the ``process`` backend.
    process: ProcessSettings = msgspec.field(default_factory=ProcessSettings)
    #: Options of the ``kubernetes`` backend.
    kubernetes: KubernetesSettings = msgspec.field(default_factory=KubernetesSettings)
    #: How jobs' ``ingress`` configs become Ingresses and hostnames (kubernetes and fake backends).
    ingress: IngressSettings = msgspec.field(default_factory=IngressSettings)


def check_cluster_id(cluster_id: str) -> None:
    """Refuse (``InvalidRequest`` naming ``clusterId``) an id Kubernetes refuses as a label
    value: every pod create would be a 422 and every list of the executor's pods a 400."""
    check_label_value(cluster_id, "clusterId", empty=False)
