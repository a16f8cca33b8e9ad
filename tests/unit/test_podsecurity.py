"""The pod security rules (pure): what each profile refuses, where, and that ordinary pods pass."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada.model.podsecurity import (
    PodPolicy,
    Profile,
    annotation_violation,
    job_violation,
    namespace_violation,
    profile_violation,
    service_account_violation,
)
from tests.factories import pod_spec

B, R, P = Profile.BASELINE, Profile.RESTRICTED, Profile.PRIVILEGED


def hardened() -> dict[str, Any]:
    """An ordinary pod that also meets ``restricted``."""
    spec = pod_spec()
    spec["securityContext"] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    spec["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
    }
    spec["volumes"] = [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]
    return spec


def with_(spec: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``spec`` with ``value`` set at a dotted path (``containers.0.securityContext.privileged``)."""
    spec = copy.deepcopy(spec)
    *parents, last = path.split(".")
    node: Any = spec
    for key in parents:
        node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
    node[last] = value
    return spec


def test_ordinary_pods_pass_baseline_and_hardened_ones_restricted() -> None:
    assert profile_violation(pod_spec(), B) is None
    assert profile_violation(hardened(), B) is None
    assert profile_violation(hardened(), R) is None


#: (case, change to an ordinary pod, path named) — each refused by baseline (and restricted).
BASELINE_REFUSES = [
    (
        "privileged",
        ("containers.0.securityContext.privileged", True),
        "containers[0].securityContext.privileged",
    ),
    ("hostNetwork", ("hostNetwork", True), "hostNetwork"),
    ("hostPID", ("hostPID", True), "hostPID"),
    ("hostIPC", ("hostIPC", True), "hostIPC"),
    ("hostPath", ("volumes", [{"name": "root", "hostPath": {"path": "/"}}]), "volumes[0].hostPath"),
    (
        "host port",
        ("containers.0.ports", [{"containerPort": 80, "hostPort": 80}]),
        "containers[0].ports[0].hostPort",
    ),
    (
        "SYS_ADMIN",
        (
            "containers.0.securityContext.capabilities",
            {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_ADMIN"]},
        ),
        "containers[0].securityContext.capabilities.add[1]",
    ),
    (
        "procMount",
        ("containers.0.securityContext.procMount", "Unmasked"),
        "containers[0].securityContext.procMount",
    ),
    (
        "unsafe sysctl",
        ("securityContext", {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
        "securityContext.sysctls[0].name",
    ),
    ("nodeName", ("nodeName", "node-1"), "nodeName"),
    (
        "unconfined seccomp",
        ("securityContext", {"seccompProfile": {"type": "Unconfined"}}),
        "securityContext.seccompProfile.type",
    ),
    (
        "unconfined AppArmor",
        ("containers.0.securityContext.appArmorProfile", {"type": "Unconfined"}),
        "containers[0].securityContext.appArmorProfile.type",
    ),
    (
        "SELinux user",
        ("securityContext", {"seLinuxOptions": {"user": "system_u"}}),
        "securityContext.seLinuxOptions.user",
    ),
    (
        "host process",
        ("securityContext", {"windowsOptions": {"hostProcess": True}}),
        "securityContext.windowsOptions.hostProcess",
    ),
    (
        "privileged init container",
        ("initContainers", [{"name": "i", "securityContext": {"privileged": True}}]),
        "initContainers[0].securityContext.privileged",
    ),
    (
        "privileged ephemeral container",
        ("ephemeralContainers", [{"name": "e", "securityContext": {"privileged": True}}]),
        "ephemeralContainers[0].securityContext.privileged",
    ),
]


@pytest.mark.parametrize(("case", "change", "path"), BASELINE_REFUSES, ids=[c[0] for c in BASELINE_REFUSES])
def test_baseline_and_restricted_refuse(case: str, change: tuple[str, Any], path: str) -> None:
    for base, profile in ((pod_spec(), B), (hardened(), R)):
        found = profile_violation(with_(base, *change), profile)
        assert found is not None, (case, profile)
        assert found.path == path
        assert f"pod security profile {profile.value}" in found.detail
    assert profile_violation(with_(pod_spec(), *change), P) is None


def test_baseline_allows_what_only_restricted_refuses() -> None:
    spec = with_(
        pod_spec(), "containers.0.securityContext", {"runAsUser": 0, "capabilities": {"add": ["CHOWN"]}}
    )
    spec["volumes"] = [{"name": "nfs", "nfs": {"server": "x", "path": "/"}}]
    spec["automountServiceAccountToken"] = True
    spec["securityContext"] = {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1 2"}]}
    assert profile_violation(spec, B) is None
    assert profile_violation(spec, R) is not None


RESTRICTED_REFUSES = [
    ("root user", ("containers.0.securityContext.runAsUser", 0), "containers[0].securityContext.runAsUser"),
    ("root pod", ("securityContext.runAsUser", 0), "securityContext.runAsUser"),
    (
        "runAsNonRoot false",
        ("containers.0.securityContext.runAsNonRoot", False),
        "containers[0].securityContext.runAsNonRoot",
    ),
    (
        "escalation",
        ("containers.0.securityContext.allowPrivilegeEscalation", True),
        "containers[0].securityContext.allowPrivilegeEscalation",
    ),
    (
        "capabilities kept",
        ("containers.0.securityContext.capabilities", {"drop": ["NET_RAW"]}),
        "containers[0].securityContext.capabilities.drop",
    ),
    (
        "CHOWN added",
        ("containers.0.securityContext.capabilities", {"drop": ["ALL"], "add": ["CHOWN"]}),
        "containers[0].securityContext.capabilities.add[0]",
    ),
    (
        "no seccomp",
        ("securityContext", {"runAsNonRoot": True}),
        "containers[0].securityContext.seccompProfile.type",
    ),
    ("nfs volume", ("volumes", [{"name": "n", "nfs": {"server": "s", "path": "/"}}]), "volumes[0].nfs"),
    ("token", ("automountServiceAccountToken", True), "automountServiceAccountToken"),
]


@pytest.mark.parametrize(
    ("case", "change", "path"), RESTRICTED_REFUSES, ids=[c[0] for c in RESTRICTED_REFUSES]
)
def test_restricted_refuses(case: str, change: tuple[str, Any], path: str) -> None:
    found = profile_violation(with_(hardened(), *change), R)
    assert found is not None and found.path == path, (case, found)


def test_restricted_refuses_an_ordinary_root_container() -> None:
    found = profile_violation(pod_spec(), R)
    assert found is not None
    assert found.path == "containers[0].securityContext.allowPrivilegeEscalation"
    no_escalation = with_(pod_spec(), "containers.0.securityContext.allowPrivilegeEscalation", False)
    found = profile_violation(no_escalation, R)
    assert found is not None and found.path == "containers[0].securityContext.runAsNonRoot"
    assert "root" in found.detail


def test_container_settings_override_the_pods() -> None:
    spec = with_(hardened(), "containers.0.securityContext.runAsNonRoot", None)
    assert profile_violation(spec, R) is None  # null is unset: the pod's true applies
    spec = with_(hardened(), "containers.0.securityContext.seccompProfile", {"type": "Localhost"})
    spec["securityContext"].pop("seccompProfile")
    assert profile_violation(spec, R) is None


def test_service_accounts_outside_the_allow_list() -> None:
    allowed = {"default", "reader"}
    assert service_account_violation(pod_spec(), B, allowed) is None
    assert service_account_violation({**pod_spec(), "serviceAccountName": "reader"}, R, allowed) is None
    for key in ("serviceAccountName", "serviceAccount"):
        found = service_account_violation({**pod_spec(), key: "armada-executor"}, B, allowed)
        assert found is not None and found.path == key and "armada-executor" in found.detail
    assert (
        service_account_violation({**pod_spec(), "serviceAccountName": "armada-executor"}, P, allowed) is None
    )


def test_annotations_that_unconfine_a_container() -> None:
    apparmor = "container.apparmor.security.beta.kubernetes.io/main"
    assert annotation_violation({apparmor: "runtime/default"}, B) is None
    assert annotation_violation({apparmor: "localhost/mine"}, R) is None
    found = annotation_violation({apparmor: "unconfined"}, B)
    assert found is not None and found.path == apparmor
    found = annotation_violation({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}, B)
    assert found is not None
    assert annotation_violation({apparmor: "unconfined"}, P) is None


def test_namespaces() -> None:
    assert namespace_violation("default", {"default"}) is None
    assert "not allowed" in (namespace_violation("team-b", {"default", "team-a"}) or "")
    assert "reserved" in (namespace_violation("armada", {"armada"}, {"armada"}) or "")


def test_job_violation_names_the_field_relative_to_the_job() -> None:
    policy = PodPolicy(namespaces=frozenset({"default"}), reserved_namespaces=frozenset({"armada"}))
    assert job_violation("default", pod_spec(), {}, policy) is None
    assert (job_violation("armada", pod_spec(), {}, policy) or "").path == "namespace"  # type: ignore[union-attr]
    found = job_violation("default", with_(pod_spec(), "hostPID", True), {}, policy)
    assert found is not None and found.path == "podSpec.hostPID"
    found = job_violation(
        "default", pod_spec(), {"container.apparmor.security.beta.kubernetes.io/m": "x"}, policy
    )
    assert found is not None and found.path.startswith("annotations.container.apparmor")


_keys = st.sampled_from(
    [
        *("containers", "initContainers", "securityContext", "volumes", "hostNetwork", "nodeName", "ports"),
        *("capabilities", "add", "drop", "sysctls", "name", "type", "seLinuxOptions", "seccompProfile"),
        *("appArmorProfile", "serviceAccountName", "hostPort", "procMount", "runAsNonRoot", "hostPath"),
    ]
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["", "ALL", "Default"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _json, max_size=5))
def test_malformed_specs_never_crash(spec: dict[str, Any]) -> None:
    for profile in Profile:
        profile_violation(spec, profile)
        service_account_violation(spec, profile, {"default"})


@pytest.mark.parametrize(
    "spec",
    [
        {"serviceAccountName": ["x"]},
        {"securityContext": {"sysctls": [{"name": {}}]}},
        {"securityContext": {"seLinuxOptions": {"type": []}, "seccompProfile": {"type": {}}}},
        {"containers": [{"securityContext": {"capabilities": {"add": [[]], "drop": "ALL"}}}]},
        {"containers": "x", "volumes": {"hostPath": {}}, "securityContext": []},
    ],
)
def test_unhashable_or_misplaced_values_are_refused_or_ignored_not_raised(spec: dict[str, Any]) -> None:
    for profile in Profile:
        profile_violation(spec, profile)
        service_account_violation(spec, profile, {"default"})
    assert service_account_violation({"serviceAccountName": ["x"]}, B, {"default"}) is not None
