"""Pod security: which pod specs a queue may run, modelled on Kubernetes' Pod Security Standards.

A user allowed to submit to one queue must not be able to take over the cluster its jobs
run in. Upstream Armada leaves that to Kubernetes admission control; Armada checks it
itself, at submit (a 400 naming the field) *and* again in the executor before it creates
anything, so a job stored before a rule tightened, or written by anything but the API,
still never reaches a cluster. Pod Security Admission on the job namespaces is the second
wall (see ``docs/security.md``).

The rules are pure functions of the pod spec (JSON as submitted) and a :class:`PodPolicy`,
so the server and the executor run the very same code and neither needs the other's
dependencies. Paths in a :class:`Violation` are relative to the pod spec, in the
JSON-path style of every other validation message (``containers[0].securityContext.privileged``).

Profiles, from the Pod Security Standards (https://kubernetes.io/docs/concepts/security/pod-security-standards/):

- ``privileged``: anything goes (system workloads trusted like cluster admins).
- ``baseline`` (the default): no known privilege escalation: no privileged or host-process
  containers, host namespaces, ``hostPath`` volumes, host ports, capabilities beyond the
  baseline set, non-default ``/proc`` mounts, custom SELinux users/roles/types, unconfined
  seccomp or AppArmor, or unsafe sysctls.
- ``restricted``: baseline, plus hardening: non-root, no privilege escalation, every
  capability dropped (``NET_BIND_SERVICE`` may be added back), a ``RuntimeDefault`` or
  ``Localhost`` seccomp profile, only ephemeral-style volume types, and no explicitly
  mounted service account token.

Unless the profile is ``privileged``, Armada also rejects ``nodeName`` (placement is the
scheduler's: a pinned pod bypasses fair share, node selection and the scheduler's
accounting) and a service account outside the allow-list (a service account is an
identity in the cluster: the executor's own would let a job create pods anywhere). Whatever
the profile, a *wildcard toleration* (operator ``Exists`` and no key: it tolerates every
taint, the control plane's included) is refused unless the policy allows it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Profile(StrEnum):
    """A pod security profile; the names and meaning are the Pod Security Standards'."""

    RESTRICTED = "restricted"
    BASELINE = "baseline"
    PRIVILEGED = "privileged"


#: Capabilities a ``baseline`` container may add (the PSS baseline list).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
#: Capabilities a ``restricted`` container may add back after dropping ``ALL``.
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
#: Namespaced sysctls that cannot affect other pods on the node (the PSS "safe" set).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
#: SELinux types a ``baseline`` pod may ask for (empty: the runtime's default).
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
#: Volume sources a ``restricted`` pod may use: none of them reaches the node or the network.
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
#: Annotation prefixes that set a container's AppArmor or seccomp profile (older clusters).
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
SECCOMP_ANNOTATIONS = (
    "seccomp.security.alpha.kubernetes.io/",
    "container.seccomp.security.alpha.kubernetes.io/",
)
_CONFINED = frozenset({"RuntimeDefault", "Localhost"})
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class Violation:
    """A rule a pod spec breaks: where (relative to the pod spec) and why."""

    path: str
    detail: str


@dataclass(frozen=True)
class PodPolicy:
    """What one queue's jobs may be: a profile, the service accounts they may run as, and
    the namespaces they may run in (``reserved`` ones never, whatever ``namespaces`` says)."""

    profile: Profile = Profile.BASELINE
    service_accounts: frozenset[str] = frozenset({"default"})
    namespaces: frozenset[str] = frozenset({"default"})
    reserved_namespaces: frozenset[str] = frozenset()
    #: Tolerations with operator ``Exists`` and no key (every taint tolerated) are allowed.
    wildcard_tolerations: bool = False


def job_violation(
    namespace: str, pod_spec: dict[str, Any], annotations: dict[str, str], policy: PodPolicy
) -> Violation | None:
    """The first rule of ``policy`` a job breaks; paths are relative to the job (``podSpec.…``).

    The executor's whole check; the server runs the same parts separately so that it can
    cache the pod spec's verdict.
    """
    reason = namespace_violation(namespace, policy.namespaces, policy.reserved_namespaces)
    if reason is not None:
        return Violation("namespace", reason)
    found = profile_violation(pod_spec, policy.profile) or service_account_violation(
        pod_spec, policy.profile, policy.service_accounts
    )
    if found is None and not policy.wildcard_tolerations:
        found = toleration_violation(pod_spec)
    if found is not None:
        return Violation(f"podSpec.{found.path}", found.detail)
    found = annotation_violation(annotations, policy.profile)
    return None if found is None else Violation(f"annotations.{found.path}", found.detail)


def namespace_violation(
    namespace: str, allowed: Collection[str], reserved: Collection[str] = ()
) -> str | None:
    """Why ``namespace`` may not hold the job's pod, or ``None`` when it may."""
    if namespace in reserved:
        return f"namespace {namespace!r} is reserved (Armada's own or the cluster's); jobs never run there"
    if namespace not in allowed:
        return f"namespace {namespace!r} is not allowed for this queue; allowed: {', '.join(sorted(allowed))}"
    return None


def annotation_violation(annotations: dict[str, str], profile: Profile) -> Violation | None:
    """An annotation that weakens confinement (the executor copies job annotations onto the pod)."""
    if profile == Profile.PRIVILEGED:
        return None
    for key, value in annotations.items():
        if (
            key.startswith(APPARMOR_ANNOTATION)
            and value != "runtime/default"
            and not value.startswith("localhost/")
        ):
            return Violation(
                key, f"AppArmor profile {value!r} is not allowed; use runtime/default or localhost/*"
            )
        if (
            key.startswith(SECCOMP_ANNOTATIONS)
            and value not in ("runtime/default", "docker/default")
            and not value.startswith("localhost/")
        ):
            return Violation(
                key, f"seccomp profile {value!r} is not allowed; use runtime/default or localhost/*"
            )
    return None


def service_account_violation(
    pod_spec: dict[str, Any], profile: Profile, allowed: Collection[str]
) -> Violation | None:
    """A service account named outside ``allowed`` (no name: the namespace's default account)."""
    if profile == Profile.PRIVILEGED:
        return None
    for key in ("serviceAccountName", "serviceAccount"):
        name = pod_spec.get(key)
        if name is not None and name != "" and not _one_of(name, allowed):
            listed = ", ".join(sorted(allowed)) or "none"
            return Violation(
                key, f"service account {name!r} is not allowed for this queue; allowed: {listed}"
            )
    return None


def toleration_violation(pod_spec: dict[str, Any]) -> Violation | None:
    """A wildcard toleration (operator ``Exists``, no key): it tolerates every taint, so the
    pod may land on control-plane and other reserved nodes."""
    for index, toleration in enumerate(_list(pod_spec.get("tolerations"))):
        found = _object(toleration)
        if found.get("operator") == "Exists" and not found.get("key"):
            return Violation(
                f"tolerations[{index}]",
                "a toleration with operator Exists and no key tolerates every taint (control-plane "
                "nodes included) and is not allowed; name the taint's key",
            )
    return None


def profile_violation(pod_spec: dict[str, Any], profile: Profile) -> Violation | None:
    """The first rule of ``profile`` that ``pod_spec`` breaks (service accounts aside)."""
    if profile == Profile.PRIVILEGED:
        return None
    for violation in _violations(pod_spec, profile):
        return Violation(violation.path, f"{violation.detail} (pod security profile {profile.value})")
    return None


def _violations(spec: dict[str, Any], profile: Profile) -> Iterator[Violation]:
    if spec.get("nodeName"):
        yield Violation("nodeName", "nodeName is not allowed: Armada places pods on nodes")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key) is True:
            yield Violation(key, f"{key} is not allowed: it shares the node's namespaces")
    restricted = profile == Profile.RESTRICTED
    if restricted and spec.get("automountServiceAccountToken") is True:
        yield Violation("automountServiceAccountToken", "mounting a service account token is not allowed")
    pod_context = _object(spec.get("securityContext"))
    yield from _context_violations(pod_context, "securityContext", restricted)
    for index, sysctl in enumerate(_list(pod_context.get("sysctls"))):
        name = _object(sysctl).get("name")
        if not _one_of(name, SAFE_SYSCTLS):
            yield Violation(
                f"securityContext.sysctls[{index}].name",
                f"sysctl {name!r} is not allowed; safe sysctls: {', '.join(sorted(SAFE_SYSCTLS))}",
            )
    for index, volume in enumerate(_list(spec.get("volumes"))):
        yield from _volume_violations(_object(volume), f"volumes[{index}]", restricted)
    for list_key in _CONTAINER_LISTS:
        for index, container in enumerate(_list(spec.get(list_key))):
            yield from _container_violations(
                _object(container), f"{list_key}[{index}]", pod_context, restricted
            )


def _volume_violations(volume: dict[str, Any], path: str, restricted: bool) -> Iterator[Violation]:
    if "hostPath" in volume:
        yield Violation(f"{path}.hostPath", "hostPath volumes are not allowed: they expose the node's files")
    if restricted:
        for source in sorted(set(volume) - RESTRICTED_VOLUMES - {"name"}):
            yield Violation(
                f"{path}.{source}",
                f"{source} volumes are not allowed; allowed: {', '.join(sorted(RESTRICTED_VOLUMES))}",
            )


def _container_violations(
    container: dict[str, Any], path: str, pod_context: dict[str, Any], restricted: bool
) -> Iterator[Violation]:
    context = _object(container.get("securityContext"))
    where = f"{path}.securityContext"
    if context.get("privileged") is True:
        yield Violation(f"{where}.privileged", "privileged containers are not allowed")
    proc_mount = context.get("procMount")
    if proc_mount not in (None, "", "Default"):
        yield Violation(f"{where}.procMount", f"procMount {proc_mount!r} is not allowed; only Default")
    yield from _context_violations(context, where, restricted)
    for index, port in enumerate(_list(container.get("ports"))):
        if _object(port).get("hostPort") not in (None, 0):
            yield Violation(f"{path}.ports[{index}].hostPort", "host ports are not allowed")
    capabilities = _object(context.get("capabilities"))
    permitted = RESTRICTED_CAPABILITIES if restricted else BASELINE_CAPABILITIES
    for index, capability in enumerate(_list(capabilities.get("add"))):
        if not _one_of(capability, permitted):
            yield Violation(
                f"{where}.capabilities.add[{index}]",
                f"adding capability {capability!r} is not allowed; allowed: {', '.join(sorted(permitted))}",
            )
    if restricted:
        yield from _restricted_container(context, where, pod_context)


def _restricted_container(
    context: dict[str, Any], where: str, pod_context: dict[str, Any]
) -> Iterator[Violation]:
    if context.get("allowPrivilegeEscalation") is not False:
        yield Violation(f"{where}.allowPrivilegeEscalation", "set allowPrivilegeEscalation: false")
    non_root = context.get("runAsNonRoot")
    if non_root is None:
        non_root = pod_context.get("runAsNonRoot")
    if non_root is not True:
        yield Violation(
            f"{where}.runAsNonRoot",
            "containers must not run as root: set runAsNonRoot: true (pod or container securityContext)",
        )
    seccomp = _object(context.get("seccompProfile")) or _object(pod_context.get("seccompProfile"))
    if not _one_of(seccomp.get("type"), _CONFINED):
        yield Violation(
            f"{where}.seccompProfile.type",
            "set a seccompProfile of type RuntimeDefault or Localhost (pod or container securityContext)",
        )
    if "ALL" not in _list(_object(context.get("capabilities")).get("drop")):
        yield Violation(f"{where}.capabilities.drop", "containers must drop ALL capabilities")


def _context_violations(context: dict[str, Any], where: str, restricted: bool) -> Iterator[Violation]:
    """Rules shared by pod and container security contexts."""
    if _object(context.get("windowsOptions")).get("hostProcess") is True:
        yield Violation(f"{where}.windowsOptions.hostProcess", "host-process containers are not allowed")
    if restricted and context.get("runAsUser") == 0:
        yield Violation(f"{where}.runAsUser", "running as user 0 (root) is not allowed")
    selinux = _object(context.get("seLinuxOptions"))
    if not _one_of(selinux.get("type") or "", SELINUX_TYPES):
        yield Violation(
            f"{where}.seLinuxOptions.type", f"SELinux type {selinux.get('type')!r} is not allowed"
        )
    for key in ("user", "role"):
        if selinux.get(key):
            yield Violation(f"{where}.seLinuxOptions.{key}", f"setting the SELinux {key} is not allowed")
    for key in ("seccompProfile", "appArmorProfile"):
        kind = _object(context.get(key)).get("type")
        if kind is not None and not _one_of(kind, _CONFINED):
            yield Violation(
                f"{where}.{key}.type", f"{key} type {kind!r} is not allowed; use RuntimeDefault or Localhost"
            )


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else empty: a malformed field is Kubernetes' to refuse,
    and reading it as absent never lets a forbidden setting through (it would not apply)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _one_of(value: Any, allowed: Collection[str]) -> bool:
    """Membership that a malformed value (a list, an object) fails instead of raising."""
    return isinstance(value, str) and value in allowed
