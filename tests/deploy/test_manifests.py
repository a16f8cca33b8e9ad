"""The Kubernetes manifests: they parse, reference each other correctly, configure a server
that starts, grant the executor exactly the API calls its code makes, and carry no
credentials (Secrets come from a secretGenerator over untracked files)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from armada.auth.bind_address import startup_refusals
from armada.auth.published import PUBLISHED_HASHES
from armada.auth.secrets import hash_password, hash_token, new_token
from armada.model.podsecurity import PodPolicy, Profile, job_violation, profile_violation
from armada.settings import load_settings
from tests.processes import ROOT

MANIFESTS = ROOT / "deploy" / "kubernetes"
KUBE_BACKEND = sorted((ROOT / "armada" / "executor" / "backends").glob("kube*.py"))


def _load() -> dict[tuple[str, str], dict[str, Any]]:
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            assert {"apiVersion", "kind", "metadata"} <= doc.keys(), path
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in objects, f"{key} defined twice"
            objects[key] = doc
    return objects


def _env_file(path: Path) -> dict[str, str]:
    """A kustomize ``envs`` file: ``KEY=VALUE`` lines, ``#`` comments."""
    lines = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def _generated() -> dict[tuple[str, str], dict[str, Any]]:
    """The Secrets kustomize generates once each ``envs`` file is copied from its example."""
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    secrets = {}
    for generator in kustomization["secretGenerator"]:
        (envs,) = generator["envs"]
        data = _env_file(MANIFESTS / f"{envs}.example")
        metadata = {"name": generator["name"], "namespace": generator["namespace"]}
        secrets[("Secret", generator["name"])] = {"kind": "Secret", "metadata": metadata, "stringData": data}
    return secrets


OBJECTS = _load() | _generated()
HASH = re.compile(r"scrypt:\d+:\d+:\d+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+|sha256:[0-9a-f]{64}")


def obj(kind: str, name: str) -> dict[str, Any]:
    assert (kind, name) in OBJECTS, f"no {kind} {name!r} in deploy/kubernetes"
    return OBJECTS[(kind, name)]


def test_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["resources"]
    present = sorted(str(p.relative_to(MANIFESTS)) for p in MANIFESTS.rglob("*.yaml"))
    assert sorted(listed) == [p for p in present if p != "kustomization.yaml"]


def test_kinds() -> None:
    kinds = Counter(kind for kind, _ in OBJECTS)
    assert kinds == {
        "Namespace": 2,
        "PriorityClass": 2,
        "ServiceAccount": 2,
        "ConfigMap": 1,
        "Secret": 2,
        "Deployment": 2,
        "PodDisruptionBudget": 1,
        "Service": 1,
        "Ingress": 1,
        "ClusterRole": 1,
        "ClusterRoleBinding": 1,
    }
    assert (
        obj("PriorityClass", "armada-default")["value"] > obj("PriorityClass", "armada-preemptible")["value"]
    )
    # Only Armada preempts Armada's pods: the kube-scheduler must not evict them on its own.
    assert {
        obj("PriorityClass", n)["preemptionPolicy"] for n in ("armada-default", "armada-preemptible")
    } == {"Never"}
    namespaced = [doc for (kind, _), doc in OBJECTS.items() if kind not in _CLUSTER_SCOPED]
    assert {doc["metadata"].get("namespace") for doc in namespaced} == {"armada"}


_CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding"}


def _pod(deployment: str) -> dict[str, Any]:
    spec: dict[str, Any] = obj("Deployment", deployment)["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod: dict[str, Any] = spec["template"]["spec"]
    return pod


@pytest.mark.parametrize("deployment", ["armada-server", "armada-executor"])
def test_deployments_reference_what_exists_and_run_unprivileged(deployment: str) -> None:
    pod = _pod(deployment)
    obj("ServiceAccount", pod["serviceAccountName"])
    assert pod["securityContext"]["runAsNonRoot"] is True
    for volume in pod.get("volumes", []):
        if "configMap" in volume:
            obj("ConfigMap", volume["configMap"]["name"])
        if "secret" in volume:
            obj("Secret", volume["secret"]["secretName"])
    (container,) = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert {m["name"] for m in container.get("volumeMounts", [])} <= {v["name"] for v in pod["volumes"]}
    for source in container.get("envFrom", []):
        obj("Secret", source["secretRef"]["name"])


def test_server_has_two_replicas_behind_a_service_and_a_tls_ingress() -> None:
    assert obj("Deployment", "armada-server")["spec"]["replicas"] == 2
    pod = _pod("armada-server")
    (container,) = pod["containers"]
    assert container["args"][0] == "serve"
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8080}
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    service = obj("Service", "armada-server")
    assert service["spec"]["selector"].items() <= pod_labels("armada-server").items()
    assert {p["targetPort"] for p in service["spec"]["ports"]} == {"http"}
    ingress = obj("Ingress", "armada-server")["spec"]
    (tls,) = ingress["tls"]
    assert tls["secretName"] and tls["hosts"] == [rule["host"] for rule in ingress["rules"]]
    for rule in ingress["rules"]:
        for path in rule["http"]["paths"]:
            backend = path["backend"]["service"]
            assert backend["port"]["name"] in {
                p["name"] for p in obj("Service", backend["name"])["spec"]["ports"]
            }


def pod_labels(deployment: str) -> dict[str, str]:
    labels: dict[str, str] = obj("Deployment", deployment)["spec"]["template"]["metadata"]["labels"]
    return labels


def test_server_configuration_loads_and_requires_credentials(tmp_path: Path) -> None:
    """The ConfigMap's file and the Secret's ARMADA_* variables, once an operator has put
    their own hashes in place of the placeholders, make settings a server starts with."""
    settings = _server_settings(tmp_path)
    assert settings.database.url.startswith("postgresql")
    assert settings.auth.anonymous is False
    assert settings.server.host == "0.0.0.0"
    assert startup_refusals(settings.auth, settings.server.host) == []
    assert obj("Secret", "armada-executor")["stringData"] == {"ARMADA_TOKEN": "REPLACE-WITH-TOKEN"}


def test_the_manifests_carry_no_credentials() -> None:
    """No hash (least of all one published in examples/) and no Secret object is applied
    from the repository; the generator's input files are never tracked."""
    for path in sorted(p for p in MANIFESTS.rglob("*") if p.is_file()):
        text = path.read_text()
        assert not HASH.search(text), f"{path} contains a password or token hash"
        assert not any(known in text for known in PUBLISHED_HASHES), path
        assert "executor-token" not in text, path
    assert not [key for key in _load() if key[0] == "Secret"], "Secrets come from the secretGenerator"
    assert "*.env" in (MANIFESTS / ".gitignore").read_text().split()


def test_the_list_of_published_hashes_is_what_examples_publish() -> None:
    published = {
        m[0]
        for path in (ROOT / "examples").rglob("*")
        if path.is_file()
        for m in HASH.finditer(path.read_text())
    }
    assert published == PUBLISHED_HASHES


def test_executor_is_bound_to_its_cluster_role() -> None:
    binding = obj("ClusterRoleBinding", "armada-executor")
    role = binding["roleRef"]
    assert role["kind"] == "ClusterRole"
    obj("ClusterRole", role["name"])
    (subject,) = binding["subjects"]
    assert subject["kind"] == "ServiceAccount"
    assert obj("ServiceAccount", subject["name"])["metadata"]["namespace"] == subject["namespace"]
    assert _pod("armada-executor")["serviceAccountName"] == subject["name"]


_VERBS = {
    "create": "create",
    "read": "get",
    "delete": "delete",
    "list": "list",
    "patch": "patch",
    "replace": "update",
}
_CALL = re.compile(
    r"^(create|read|delete|list|patch|replace)_(?:namespaced_)?([a-z_]+?)(?:_for_all_namespaces)?$"
)


#: The API group of each typed API, by the attribute the code reaches it through.
_GROUPS = {"_core": "", "core": "", "_networking": "networking.k8s.io", "networking": "networking.k8s.io"}


def _resource(kind: str) -> str:
    """``pod`` → ``pods``, ``pod_log`` → ``pods/log``, ``node`` → ``nodes``, ``ingress`` → ``ingresses``."""
    main, _, sub = kind.partition("_")
    plural = f"{main}es" if main.endswith("s") else f"{main}s"
    return f"{plural}/{sub}" if sub else plural


def _core_calls(tree: ast.AST) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) for each CoreV1Api or NetworkingV1Api method the code uses
    on ``self._core`` / ``self._networking`` (or a ``KubeCalls``' ``core`` / ``networking``);
    a method handed to ``watch.Watch().stream``, ``KubeCalls.watch`` or an ``Informer`` is
    also watched (core only)."""
    used: set[tuple[str, str, str]] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in _GROUPS
        ):
            match = _CALL.match(node.attr)
            assert match, f"unknown Kubernetes call {node.attr}: extend this test and the ClusterRole"
            used.add((_GROUPS[node.value.attr], _resource(match[2]), _VERBS[match[1]]))
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name not in ("stream", "watch", "Informer"):
                continue
            for arg in node.args[:2]:
                if isinstance(arg, ast.Attribute) and (match := _CALL.match(arg.attr)):
                    used.add(("", _resource(match[2]), "watch"))
    return used


def test_executor_rbac_is_exactly_what_its_code_calls() -> None:
    calls: set[tuple[str, str, str]] = set()
    for path in KUBE_BACKEND:
        source = path.read_text()
        apis = set(re.findall(r"client\.(\w+Api)\(", source))
        known = {"CoreV1Api", "NetworkingV1Api"}
        assert apis <= known, f"{path.name} uses {apis}: extend this test and the ClusterRole"
        calls |= _core_calls(ast.parse(source))
    # The scan found the backend, and what exposes its pods' ports.
    assert {
        ("", "pods", "create"),
        ("", "pods", "watch"),
        ("networking.k8s.io", "ingresses", "create"),
    } <= calls
    granted = set()
    for rule in obj("ClusterRole", "armada-executor")["rules"]:
        (group,) = rule["apiGroups"]
        granted |= {(group, resource, verb) for resource in rule["resources"] for verb in rule["verbs"]}
    assert granted == calls


_PSA = "pod-security.kubernetes.io/enforce"
#: Pod Security Admission levels, loosest first.
_LEVELS = [Profile.PRIVILEGED, Profile.BASELINE, Profile.RESTRICTED]


def _executor_env() -> dict[str, str]:
    (container,) = _pod("armada-executor")["containers"]
    return {e["name"]: e.get("value", "") for e in container["env"]}


def _server_settings(tmp_path: Path) -> Any:
    """The server's settings once an operator has filled in the Secret's template."""
    config = tmp_path / "config.yaml"
    config.write_text(obj("ConfigMap", "armada-server")["data"]["config.yaml"])
    env = {
        key: value.replace("REPLACE-WITH-SCRYPT-HASH", hash_password("mine", log2_n=4)).replace(
            "REPLACE-WITH-SHA256-HASH", hash_token(new_token())
        )
        for key, value in obj("Secret", "armada-server")["stringData"].items()
    }
    return load_settings(config, env=env)


def test_job_namespaces_are_labelled_for_pod_security_admission(tmp_path: Path) -> None:
    """Every namespace jobs may run in (server and executor allow-lists) enforces a Pod Security
    Admission level at least as strict as Armada's own profile: the second wall."""
    submission = _server_settings(tmp_path).submission
    env = _executor_env()
    executor_namespaces = yaml.safe_load(env["ARMADA_EXECUTOR_ALLOWED_NAMESPACES"])
    assert set(executor_namespaces) == set(submission.allowed_namespaces)
    executor_profile = Profile(env["ARMADA_EXECUTOR_POD_SECURITY_PROFILE"])
    for namespace in executor_namespaces:
        level = Profile(obj("Namespace", namespace)["metadata"]["labels"][_PSA])
        for profile in (submission.pod_security_profile, executor_profile):
            assert _LEVELS.index(level) >= _LEVELS.index(profile), (namespace, level, profile)


def test_armadas_own_namespace_is_restricted_and_reserved(tmp_path: Path) -> None:
    assert obj("Namespace", "armada")["metadata"]["labels"][_PSA] == "restricted"
    assert "armada" in _server_settings(tmp_path).submission.reserved_namespaces
    (container,) = _pod("armada-executor")["containers"]
    own = next(e for e in container["env"] if e["name"] == "ARMADA_EXECUTOR_OWN_NAMESPACE")
    assert own["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    # A job naming the executor's namespace or service account is refused by the rules themselves.
    policy = PodPolicy(reserved_namespaces=frozenset({"armada"}))
    assert job_violation("armada", {"containers": [{}]}, {}, policy) is not None
    spec = {"containers": [{}], "serviceAccountName": _pod("armada-executor")["serviceAccountName"]}
    assert job_violation("default", spec, {}, policy) is not None


@pytest.mark.parametrize("deployment", ["armada-server", "armada-executor"])
def test_armadas_pods_meet_the_restricted_profile(deployment: str) -> None:
    """What the `armada` namespace's admission label enforces, checked with Armada's own rules."""
    assert profile_violation(_pod(deployment), Profile.RESTRICTED) is None
