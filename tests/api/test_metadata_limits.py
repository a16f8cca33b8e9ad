"""Job and queue metadata within Kubernetes' rules, names printable (issue 34, findings 6 and 9).

Over real HTTP and real gRPC against one in-process server per database: every refusal is
a 4xx (``INVALID_ARGUMENT``) naming the field, and stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from armada_client.armada import submit_pb2, submit_pb2_grpc
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

from armada.api.settings import ServerSettings
from armada.auth.identity import ANONYMOUS
from armada.client import ArmadaClient
from armada.model.jobs import JOB_SET_ANNOTATION, OWNER_ANNOTATION
from armada.model.metadata import MAX_ANNOTATIONS_BYTES
from armada.settings import Settings
from tests.api.jobs import raw_item
from tests.processes import free_port
from tests.servers import ApiServer

MIB = 1024 * 1024
#: Right-to-left override, next line (C1), zero-width space.
INVISIBLE = ["\u202e", "\u0085", "\u200b"]


@pytest.fixture(scope="module")
def grpc_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def settings(grpc_port: int) -> Settings:
    return Settings(server=ServerSettings(grpc_port=grpc_port))


@pytest.fixture
def stub(server: ApiServer, grpc_port: int) -> Iterator[submit_pb2_grpc.SubmitStub]:
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        yield submit_pb2_grpc.SubmitStub(channel)  # type: ignore[no-untyped-call]


def _refused(server: ApiServer, path: str, body: dict[str, Any], field: str) -> dict[str, Any]:
    """POST ``body``: a 400 problem naming ``field``, and nothing appended."""
    head = server.head()
    response = httpx.post(f"{server.url}{path}", json=body, timeout=60)
    assert response.status_code == 400, response.text[:500]
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["field"] == field, problem
    assert len(response.content) < 2000  # the detail quotes a prefix, never the whole value
    assert server.head() == head
    return problem


def _submit(queue: str, job_set: str = "set", **item: Any) -> dict[str, Any]:
    return {"queue": queue, "jobSetId": job_set, "jobRequestItems": [raw_item(**item)]}


#: (case, item fields, field the problem names)
BAD_ITEMS: list[tuple[str, dict[str, Any], str]] = [
    ("8 MiB annotation", {"annotations": {"big": "x" * (8 * MIB)}}, "jobRequestItems[0].annotations"),
    ("5,000-character label key", {"labels": {"k" * 5000: "v"}}, "jobRequestItems[0].labels"),
    ("64-character label value", {"labels": {"team": "v" * 64}}, "jobRequestItems[0].labels.team"),
    ("label value with a space", {"labels": {"team": "a b"}}, "jobRequestItems[0].labels.team"),
    ("label key with two slashes", {"labels": {"a/b/c": "v"}}, "jobRequestItems[0].labels"),
    ("label key prefix upper case", {"labels": {"Example.com/k": "v"}}, "jobRequestItems[0].labels"),
    ("label key name over 63", {"labels": {"example.com/" + "k" * 64: "v"}}, "jobRequestItems[0].labels"),
    ("annotation key with a space", {"annotations": {"a b": "v"}}, "jobRequestItems[0].annotations"),
    (
        "node label value",
        {"requiredNodeLabels": {"gpu": "y" * 64}},
        "jobRequestItems[0].requiredNodeLabels.gpu",
    ),
    ("client id zero-width", {"clientId": "a\u200bb"}, "jobRequestItems[0].clientId"),
    (
        "gang id bidi",
        {"annotations": {"armadaproject.io/gangId": "g\u202e", "armadaproject.io/gangCardinality": "1"}},
        "jobRequestItems[0].annotations.armadaproject.io/gangId",
    ),
    (
        "ingress annotations over 256 KiB",
        {"ingress": [{"ports": [8080], "annotations": {"a": "x" * (256 * 1024)}}]},
        "jobRequestItems[0].ingress[0].annotations",
    ),
]


@pytest.mark.parametrize(("fields", "field"), [c[1:] for c in BAD_ITEMS], ids=[c[0] for c in BAD_ITEMS])
def test_metadata_outside_kubernetes_rules_is_refused(
    server: ApiServer, queue: str, fields: dict[str, Any], field: str
) -> None:
    _refused(server, "/v1/job/submit", _submit(queue, **fields), field)


def test_annotations_may_fill_kubernetes_limit_with_what_armada_adds(
    server: ApiServer, client: ArmadaClient, queue: str
) -> None:
    """The pod also gets the job set id and owner annotations: they count too."""
    added = len(JOB_SET_ANNOTATION) + len("set") + len(OWNER_ANNOTATION) + len(ANONYMOUS)
    room = MAX_ANNOTATIONS_BYTES - added - len("big") - len("armadaproject.io/note") - len("é".encode())
    fits = {"big": "x" * room, "armadaproject.io/note": "é"}  # é: 2 bytes, counted as bytes
    over = {"big": "x" * (room + 1), "armadaproject.io/note": "é"}
    problem = _refused(
        server, "/v1/job/submit", _submit(queue, annotations=over), "jobRequestItems[0].annotations"
    )
    assert str(MAX_ANNOTATIONS_BYTES) in problem["detail"]
    response = httpx.post(f"{server.url}/v1/job/submit", json=_submit(queue, annotations=fits), timeout=60)
    assert response.status_code == 200, response.text[:500]
    job_id = response.json()["jobResponseItems"][0]["jobId"]
    spec = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert spec is not None and spec.annotations == fits


def test_valid_kubernetes_metadata_is_kept(server: ApiServer, client: ArmadaClient, queue: str) -> None:
    labels = {"app.kubernetes.io/name": "x" * 63, "example.com/" + "k" * 63: "", "Team_A.b-1": "A_b.c-9"}
    annotations = {"Example.COM/Note": "any text: spaces, / and \u202e are fine in values"}
    body = _submit(queue, labels=labels, annotations=annotations, namespace="team-a1")
    body["jobRequestItems"][0]["requiredNodeLabels"] = {"nvidia.com/gpu.present": "true"}
    # The queue must allow the namespace (anonymous holds every permission).
    allowed = httpx.put(
        f"{server.url}/v1/queue/{queue}", json={"name": queue, "allowedNamespaces": ["team-a1"]}
    )
    assert allowed.status_code == 200, allowed.text
    response = httpx.post(f"{server.url}/v1/job/submit", json=body, timeout=60)
    assert response.status_code == 200, response.text
    job_id = response.json()["jobResponseItems"][0]["jobId"]
    spec = client.job_details([job_id], expand_spec=True)[job_id].job_spec
    assert spec is not None
    assert (spec.labels, spec.annotations, spec.namespace) == (labels, annotations, "team-a1")


@pytest.mark.parametrize("char", INVISIBLE, ids=["U+202E", "U+0085", "U+200B"])
def test_job_set_ids_must_be_printable(server: ApiServer, queue: str, char: str) -> None:
    job_set = f"set{char}1"
    problem = _refused(server, "/v1/job/submit", _submit(queue, job_set), "jobSetId")
    assert f"U+{ord(char):04X}" in problem["detail"]
    for path, body in [
        ("/v1/job/cancel", {"queue": queue, "jobSetId": job_set}),
        ("/v1/job/cancel", {"queue": queue, "jobSetId": job_set, "jobIds": ["01abc"]}),
        ("/v1/jobset/cancel", {"queue": queue, "jobSetId": job_set}),
        ("/v1/job/reprioritize", {"queue": queue, "jobSetId": job_set, "newPriority": 1}),
        ("/v1/job/preempt", {"queue": queue, "jobSetId": job_set, "jobIds": ["01abc"]}),
    ]:
        _refused(server, path, body, "jobSetId")


def test_reasons_must_be_printable(server: ApiServer, queue: str) -> None:
    _refused(server, "/v1/job/cancel", {"queue": queue, "jobSetId": "s", "reason": "ok\u202e"}, "reason")


#: (case, queue fields, field the problem names)
BAD_QUEUES: list[tuple[str, dict[str, Any], str]] = [
    ("label key 5,000 characters", {"labels": {"k" * 5000: "v"}}, "labels"),
    ("label value 64 characters", {"labels": {"team": "v" * 64}}, "labels.team"),
    ("owner with bidi override", {"userOwners": ["alice", "bob\u202e"]}, "userOwners[1]"),
    ("group with zero-width space", {"groupOwners": ["a\u200b"]}, "groupOwners[0]"),
    ("allowed namespace not a DNS label", {"allowedNamespaces": ["ok", "Team_A"]}, "allowedNamespaces[1]"),
    (
        "permission subject with C1",
        {"permissions": [{"subjects": [{"kind": "User", "name": "x\u0085"}], "verbs": ["submit"]}]},
        "permissions[0].subjects[0].name",
    ),
]


@pytest.mark.parametrize(("fields", "field"), [c[1:] for c in BAD_QUEUES], ids=[c[0] for c in BAD_QUEUES])
def test_queue_metadata_is_checked_on_create_and_update(
    server: ApiServer, queue: str, fields: dict[str, Any], field: str
) -> None:
    _refused(server, "/v1/queue", {"name": f"{queue}-new", **fields}, field)
    head = server.head()
    response = httpx.put(f"{server.url}/v1/queue/{queue}", json={"name": queue, **fields})
    assert (response.status_code, response.json()["field"]) == (400, field)
    assert server.head() == head
    assert httpx.get(f"{server.url}/v1/queue/{queue}-new").status_code == 404


def _grpc_code(call: Any, request: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as refused:
        call(request)
    return refused.value.code(), refused.value.details()


def _grpc_item(**fields: Any) -> submit_pb2.JobSubmitRequestItem:
    quantity = {"cpu": resource.Quantity(string="1"), "memory": resource.Quantity(string="64Mi")}
    resources = core_v1.ResourceRequirements(requests=quantity, limits=quantity)
    spec = core_v1.PodSpec(containers=[core_v1.Container(name="main", image="alpine", resources=resources)])
    return submit_pb2.JobSubmitRequestItem(namespace="default", pod_spec=spec, **fields)


@pytest.mark.parametrize(
    ("job_set", "fields", "field"),
    [
        ("set", {"annotations": {"big": "x" * (8 * MIB)}}, "jobRequestItems[0].annotations"),
        ("set", {"labels": {"k" * 5000: "v"}}, "jobRequestItems[0].labels"),
        ("set", {"labels": {"team": "v" * 64}}, "jobRequestItems[0].labels.team"),
        ("set\u202e", {}, "jobSetId"),
        ("set\u0085", {}, "jobSetId"),
        ("set\u200b", {}, "jobSetId"),
    ],
    ids=["8 MiB annotation", "long label key", "long label value", "U+202E", "U+0085", "U+200B"],
)
def test_grpc_submissions_get_the_same_checks(
    server: ApiServer,
    stub: submit_pb2_grpc.SubmitStub,
    queue: str,
    job_set: str,
    fields: dict[str, Any],
    field: str,
) -> None:
    head = server.head()
    request = submit_pb2.JobSubmitRequest(
        queue=queue, job_set_id=job_set, job_request_items=[_grpc_item(**fields)]
    )
    code, details = _grpc_code(stub.SubmitJobs, request)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith(f"{field}: ")
    assert server.head() == head


def test_grpc_job_set_commands_refuse_invisible_characters(
    server: ApiServer, stub: submit_pb2_grpc.SubmitStub, queue: str
) -> None:
    head = server.head()
    cancel = submit_pb2.JobSetCancelRequest(queue=queue, job_set_id="set\u202e")
    assert _grpc_code(stub.CancelJobSet, cancel)[0] == grpc.StatusCode.INVALID_ARGUMENT
    reprioritize = submit_pb2.JobReprioritizeRequest(queue=queue, job_set_id="set\u200b", new_priority=2)
    code, details = _grpc_code(stub.ReprioritizeJobs, reprioritize)
    assert (code, details.split(":")[0]) == (grpc.StatusCode.INVALID_ARGUMENT, "jobSetId")
    assert server.head() == head
    accepted = submit_pb2.JobSubmitRequest(queue=queue, job_set_id="set", job_request_items=[_grpc_item()])
    assert len(stub.SubmitJobs(accepted).job_response_items) == 1
