"""PodSpec protobuf ⇄ JSON: generated pod specs survive the round trip both ways."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada.api.grpc import podspec
from armada.api.grpc.podspec import pod_spec_from_json, pod_spec_to_json
from armada.model.errors import InvalidRequest

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
INTS = {
    FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
}
SPECIAL = {podspec._QUANTITY, podspec._INT_OR_STRING, *podspec._TIMES}


def _scalar(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    if fd.type in INTS:
        return INTS[fd.type]
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=8)
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    return TEXT


@st.composite
def _fill(draw: st.DrawFn, message: Message, depth: int) -> None:
    descriptor: Descriptor = message.DESCRIPTOR
    kind = descriptor.full_name
    if kind == podspec._QUANTITY:
        message.string = draw(st.sampled_from(["100m", "1", "64Mi", "2Gi", "0.5"]))  # type: ignore[attr-defined]
        return
    if kind == podspec._INT_OR_STRING:
        if draw(st.booleans()):
            message.type, message.strVal = 1, draw(TEXT)  # type: ignore[attr-defined]
        else:
            message.type, message.intVal = 0, draw(INTS[FieldDescriptor.TYPE_INT32])  # type: ignore[attr-defined]
        return
    if kind in podspec._TIMES:
        message.seconds = draw(st.integers(0, 4_000_000_000))  # type: ignore[attr-defined]
        message.nanos = draw(st.integers(0, 999_999)) * 1000  # type: ignore[attr-defined]
        return
    inline = [fd for fd in descriptor.fields if (kind, fd.name) in podspec._INLINE]
    plain = [fd for fd in descriptor.fields if fd not in inline]
    if depth <= 0:
        plain = [fd for fd in plain if fd.message_type is None or fd.message_type.full_name in SPECIAL]
    chosen = draw(st.lists(st.sampled_from(plain), max_size=4, unique=True)) if plain else []
    for holder in inline:  # flattened into the parent: each needs a field of its own to show
        inner = getattr(message, holder.name)
        fields = list(holder.message_type.fields)
        draw(_fill_fields(inner, [draw(st.sampled_from(fields))], depth - 1))
    draw(_fill_fields(message, chosen, depth))


@st.composite
def _fill_fields(draw: st.DrawFn, message: Message, fields: list[FieldDescriptor], depth: int) -> None:
    for fd in fields:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            target = getattr(message, fd.name)
            for key in draw(st.lists(TEXT, max_size=2, unique=True)):
                if value_fd.message_type is not None:
                    draw(_fill(target[key], depth - 1))
                else:
                    target[key] = draw(_scalar(value_fd))
        elif fd.is_repeated:
            target = getattr(message, fd.name)
            for _ in range(draw(st.integers(0, 2))):
                if fd.message_type is not None:
                    draw(_fill(target.add(), depth - 1))
                else:
                    target.append(draw(_scalar(fd)))
        elif fd.message_type is not None:
            child = getattr(message, fd.name)
            draw(_fill(child, depth - 1))
            child.SetInParent()
        else:
            setattr(message, fd.name, draw(_scalar(fd)))


@st.composite
def pod_specs(draw: st.DrawFn) -> core.PodSpec:
    spec = core.PodSpec()
    draw(_fill(spec, 4))
    return spec


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs())
def test_round_trip(spec: core.PodSpec) -> None:
    data = pod_spec_to_json(spec)
    assert msgspec.json.decode(msgspec.json.encode(data)) == data  # plain JSON
    back = pod_spec_from_json(data)
    assert back == spec
    assert pod_spec_to_json(back) == data


def test_kubernetes_json_forms() -> None:
    data = {
        "containers": [
            {
                "name": "main",
                "resources": {"requests": {"cpu": "100m"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": 8080}},
            }
        ],
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "securityContext": {"runAsUser": 0},
        "activeDeadlineSeconds": 2**40,
    }
    spec = pod_spec_from_json(data)
    assert spec.containers[0].livenessProbe.handler.httpGet.port.strVal == "http"
    assert spec.volumes[0].volumeSource.HasField("emptyDir")
    assert spec.securityContext.HasField("runAsUser")
    assert pod_spec_to_json(spec) == data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"containers": [{"name": "a", "nope": 1}]}, "podSpec.containers[0].nope"),
        ({"containers": [{"name": 1}]}, "podSpec.containers[0].name"),
        ({"activeDeadlineSeconds": "1"}, "podSpec.activeDeadlineSeconds"),
        (
            {"containers": [{"ports": [{"containerPort": 2**40}]}]},
            "podSpec.containers[0].ports[0].containerPort",
        ),
        (
            {"containers": [{"livenessProbe": {"httpGet": {"port": 1.5}}}]},
            "podSpec.containers[0].livenessProbe.httpGet.port",
        ),
    ],
)
def test_refusals_name_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        pod_spec_from_json(data)
    assert refused.value.field == field


def test_unknown_fields_of_stored_specs_are_left_out() -> None:
    spec = pod_spec_from_json({"containers": [{"name": "a", "newField": {}}]}, strict=False)
    assert pod_spec_to_json(spec) == {"containers": [{"name": "a"}]}
