"""Pod security at submit, over real HTTP on SQLite and PostgreSQL: what the default
(``baseline``) refuses, per-queue namespaces and profiles, and that the queue's security
fields survive a replay of the log. (Callers here are anonymous, who holds every permission;
the permission itself is tested in ``test_auth_pod_security``.)"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from armada.client import ArmadaApiError, ArmadaClient
from armada.eventstore.rebuild import rebuild_views
from armada.model.podsecurity import Profile
from armada.model.queues import Queue
from tests.api.jobs import pod_spec, raw_item
from tests.servers import ApiServer

SPEC = "jobRequestItems[0].podSpec"


def _with(path: str, value: Any) -> dict[str, Any]:
    """The tests' ordinary pod spec with ``value`` at a dotted path."""
    spec = pod_spec()
    *parents, last = path.split(".")
    node: Any = spec
    for key in parents:
        node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
    node[last] = value
    return spec


def _hardened(**container: Any) -> dict[str, Any]:
    spec = pod_spec(securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}})
    spec["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        **container,
    }
    return spec


#: (case, request item, field named) — each refused under the default profile, baseline.
REFUSED = [
    (
        "hostPath",
        raw_item(podSpec=_with("volumes", [{"name": "r", "hostPath": {"path": "/"}}])),
        f"{SPEC}.volumes[0].hostPath",
    ),
    (
        "privileged",
        raw_item(podSpec=_with("containers.0.securityContext", {"privileged": True})),
        f"{SPEC}.containers[0].securityContext.privileged",
    ),
    ("hostNetwork", raw_item(podSpec=_with("hostNetwork", True)), f"{SPEC}.hostNetwork"),
    ("nodeName", raw_item(podSpec=_with("nodeName", "node-1")), f"{SPEC}.nodeName"),
    ("foreign namespace", raw_item(namespace="team-b"), "jobRequestItems[0].namespace"),
    ("the executor's namespace", raw_item(namespace="armada"), "jobRequestItems[0].namespace"),
    ("a system namespace", raw_item(namespace="kube-system"), "jobRequestItems[0].namespace"),
    (
        "the executor's service account",
        raw_item(podSpec=_with("serviceAccountName", "armada-executor")),
        f"{SPEC}.serviceAccountName",
    ),
    (
        "a service account that is not a string",
        raw_item(podSpec=_with("serviceAccountName", ["armada-executor"])),
        f"{SPEC}.serviceAccountName",
    ),
    (
        "SYS_ADMIN",
        raw_item(podSpec=_with("containers.0.securityContext", {"capabilities": {"add": ["SYS_ADMIN"]}})),
        f"{SPEC}.containers[0].securityContext.capabilities.add[0]",
    ),
    (
        "host port",
        raw_item(podSpec=_with("containers.0.ports", [{"containerPort": 1, "hostPort": 1}])),
        f"{SPEC}.containers[0].ports[0].hostPort",
    ),
    (
        "unsafe sysctl",
        raw_item(podSpec=_with("securityContext", {"sysctls": [{"name": "kernel.sem", "value": "1"}]})),
        f"{SPEC}.securityContext.sysctls[0].name",
    ),
    (
        "in podSpecs",
        {"namespace": "default", "podSpecs": [_with("hostPID", True)]},
        "jobRequestItems[0].podSpecs[0].hostPID",
    ),
    (
        "unconfined AppArmor annotation",
        raw_item(annotations={"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}),
        "jobRequestItems[0].annotations.container.apparmor.security.beta.kubernetes.io/main",
    ),
]


def _submit(client: ArmadaClient, queue: str, *items: dict[str, Any]) -> httpx.Response:
    body = {"queue": queue, "jobSetId": "set", "jobRequestItems": list(items)}
    return httpx.post(f"{client.config.armada_url}/v1/job/submit", json=body, timeout=60)


def _refused(response: httpx.Response, field: str) -> str:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field, response.text
    detail: str = response.json()["detail"]
    return detail


@pytest.mark.parametrize(("case", "item", "field"), REFUSED, ids=[case for case, _, _ in REFUSED])
def test_baseline_refuses_and_stores_nothing(
    server: ApiServer, client: ArmadaClient, queue: str, case: str, item: dict[str, Any], field: str
) -> None:
    head = server.head()
    _refused(_submit(client, queue, item), field)
    # Behind an acceptable job, the index names the culprit and nothing is half-written.
    _refused(_submit(client, queue, raw_item(), item), field.replace("[0]", "[1]", 1))
    assert server.head() == head


def test_ordinary_pods_in_the_default_namespace_pass(client: ArmadaClient, queue: str) -> None:
    response = _submit(client, queue, raw_item(), raw_item(podSpec=_with("serviceAccountName", "default")))
    assert response.status_code == 200, response.text


def test_restricted_queue_refuses_a_root_container(client: ArmadaClient) -> None:
    name = f"r-{uuid.uuid4().hex[:12]}"
    client.create_queue(Queue(name=name, pod_security_profile=Profile.RESTRICTED))
    detail = _refused(
        _submit(client, name, raw_item(podSpec=_hardened(runAsUser=0))),
        f"{SPEC}.containers[0].securityContext.runAsUser",
    )
    assert "root" in detail and "restricted" in detail
    plain = _submit(client, name, raw_item())
    _refused(plain, f"{SPEC}.containers[0].securityContext.allowPrivilegeEscalation")
    assert _submit(client, name, raw_item(podSpec=_hardened(runAsUser=1000))).status_code == 200


def test_privileged_queue_and_its_own_namespaces(client: ArmadaClient) -> None:
    name = f"p-{uuid.uuid4().hex[:12]}"
    client.create_queue(
        Queue(
            name=name,
            pod_security_profile=Profile.PRIVILEGED,
            allowed_namespaces=["team-a"],
            allowed_service_accounts=["team-a-runner"],
        )
    )
    anything = raw_item(
        namespace="team-a", podSpec=_with("volumes", [{"name": "r", "hostPath": {"path": "/"}}])
    )
    assert _submit(client, name, anything).status_code == 200
    _refused(_submit(client, name, raw_item(namespace="default")), "jobRequestItems[0].namespace")
    name = f"b-{uuid.uuid4().hex[:12]}"
    client.create_queue(Queue(name=name, allowed_service_accounts=["team-a-runner"]))
    runner = raw_item(podSpec=_with("serviceAccountName", "team-a-runner"))
    assert _submit(client, name, runner).status_code == 200
    default = raw_item(podSpec=_with("serviceAccountName", "default"))
    _refused(_submit(client, name, default), f"{SPEC}.serviceAccountName")


def test_reserved_namespaces_are_refused_on_any_queue(client: ArmadaClient, queue: str) -> None:
    for namespaces, field in (
        (["team-a", "kube-system"], "allowedNamespaces[1]"),
        ([""], "allowedNamespaces[0]"),
    ):
        with pytest.raises(ArmadaApiError) as caught:
            client.update_queue(Queue(name=queue, allowed_namespaces=namespaces))
        assert (caught.value.status, caught.value.field) == (400, field)


def test_an_unknown_profile_is_a_400_naming_the_field(client: ArmadaClient) -> None:
    body = {"name": f"x-{uuid.uuid4().hex[:12]}", "podSecurityProfile": "root"}
    response = httpx.post(f"{client.config.armada_url}/v1/queue", json=body, timeout=60)
    assert response.status_code == 400, response.text
    assert "podSecurityProfile" in response.text


def test_security_fields_are_camel_case_and_survive_a_replay(server: ApiServer, client: ArmadaClient) -> None:
    name = f"s-{uuid.uuid4().hex[:12]}"
    client.create_queue(
        Queue(
            name=name,
            allowed_namespaces=["team-a", "team-b"],
            pod_security_profile=Profile.RESTRICTED,
            allowed_service_accounts=["runner"],
        )
    )
    raw = httpx.get(f"{client.config.armada_url}/v1/queue/{name}", timeout=60).json()
    assert (raw["allowedNamespaces"], raw["podSecurityProfile"], raw["allowedServiceAccounts"]) == (
        ["team-a", "team-b"],
        "restricted",
        ["runner"],
    )
    server.run(rebuild_views(server.store))
    stored = client.get_queue(name)
    assert (stored.allowed_namespaces, stored.pod_security_profile, stored.allowed_service_accounts) == (
        ["team-a", "team-b"],
        Profile.RESTRICTED,
        ["runner"],
    )
    # After the replay the queue's rules still hold at submit.
    _refused(
        _submit(client, name, raw_item(namespace="team-a")),
        f"{SPEC}.containers[0].securityContext.allowPrivilegeEscalation",
    )
