"""Kubernetes pod specs: upstream's protobuf ``k8s.io.api.core.v1.PodSpec`` ⇄ the JSON object
the REST layer accepts and stores.

The conversion walks the message descriptors of ``armada-client``'s generated modules, so
every field Kubernetes defines is carried, not a chosen few. The protobuf and JSON forms
differ in four ways, each handled here:

- ``Quantity`` is a message ``{string: "100m"}`` in protobuf and the bare string in JSON;
- ``IntOrString`` is ``{type, intVal, strVal}`` and becomes the int or the string;
- Go's inline (embedded) structs are fields in protobuf (``Probe.handler``,
  ``Volume.volumeSource``, ``EphemeralContainer.ephemeralContainerCommon``) and are
  flattened into their parent in JSON;
- ``Time`` is ``{seconds, nanos}`` and becomes an RFC 3339 string; int64 stays a number;
  bytes are base64, as Kubernetes' JSON has them.

Kubernetes' protobuf messages are proto2: a field is present only if it was set, so
``runAsUser: 0`` survives the trip while unset fields stay absent.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any, cast

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.model.errors import InvalidRequest

_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_TIMES = {"k8s.io.apimachinery.pkg.apis.meta.v1.Time", "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"}
#: Fields that Go embeds with ``json:",inline"``: their fields appear in the parent's JSON.
_INLINE = {
    ("k8s.io.api.core.v1.Probe", "handler"),
    ("k8s.io.api.core.v1.Volume", "volumeSource"),
    ("k8s.io.api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
    ("k8s.io.api.core.v1.PersistentVolume", "persistentVolumeSource"),
}
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_BYTES = FieldDescriptor.TYPE_BYTES


def pod_spec_to_json(spec: core.PodSpec) -> dict[str, Any]:
    """The JSON pod spec of a protobuf one."""
    return _message_to_json(spec)


def pod_spec_from_json(data: dict[str, Any], field: str = "podSpec", *, strict: bool = True) -> core.PodSpec:
    """The protobuf pod spec of a JSON one; wrong types raise :class:`InvalidRequest` naming
    the field, and so do unknown fields when ``strict`` (otherwise they are left out: a stored
    spec may hold fields newer than ``armada-client``'s Kubernetes version)."""
    spec = core.PodSpec()
    from_json(data, spec, field, strict=strict)
    return spec


def from_json(data: dict[str, Any], message: Message, field: str, *, strict: bool = True) -> None:
    """Fill ``message`` (any Kubernetes message) from its JSON form."""
    _json_to_message(data, message, field, strict)


def _is_map(fd: FieldDescriptor) -> bool:
    return fd.message_type is not None and fd.message_type.GetOptions().map_entry


def _kind(fd: FieldDescriptor) -> Descriptor:
    """The message type of a message-typed field."""
    assert fd.message_type is not None
    return fd.message_type


def _is_repeated(fd: FieldDescriptor) -> bool:
    return bool(fd.is_repeated)


def _message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    name = message.DESCRIPTOR.full_name
    for fd, value in message.ListFields():
        if (name, fd.name) in _INLINE:
            out.update(_message_to_json(value))
        elif _is_map(fd):
            value_fd = _kind(fd).fields_by_name["value"]
            out[fd.name] = {key: _value_to_json(value_fd, item) for key, item in value.items()}
        elif _is_repeated(fd):
            out[fd.name] = [_value_to_json(fd, item) for item in value]
        else:
            out[fd.name] = _value_to_json(fd, value)
    return out


def _value_to_json(fd: FieldDescriptor, value: Any) -> Any:
    if fd.type != _MESSAGE:
        return base64.b64encode(value).decode() if fd.type == _BYTES else value
    kind = _kind(fd).full_name
    if kind == _QUANTITY:
        return value.string
    if kind == _INT_OR_STRING:
        return value.strVal if value.type == 1 else value.intVal
    if kind in _TIMES:
        moment = datetime.fromtimestamp(value.seconds + value.nanos / 1e9, UTC)
        return moment.isoformat().replace("+00:00", "Z")
    return _message_to_json(value)


def _json_to_message(data: Any, message: Message, where: str, strict: bool) -> None:
    if not isinstance(data, dict):
        raise InvalidRequest(f"{where} must be an object", field=where)
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    inline = [fd for fd in descriptor.fields if (descriptor.full_name, fd.name) in _INLINE]
    for key, value in data.items():
        fd = descriptor.fields_by_name.get(key)
        target = message
        if fd is None or (descriptor.full_name, key) in _INLINE:
            found = _inline_field(message, inline, key)
            if found is None:
                if strict:
                    raise InvalidRequest(f"unknown field {key!r} in {where}", field=f"{where}.{key}")
                continue
            fd, target = found
        if value is None:
            continue
        _set_field(target, fd, value, f"{where}.{key}", strict)


def _inline_field(
    message: Message, inline: list[FieldDescriptor], key: str
) -> tuple[FieldDescriptor, Message] | None:
    for holder in inline:
        found = _kind(holder).fields_by_name.get(key)
        if found is not None:
            return found, getattr(message, holder.name)
    return None


def _set_field(message: Message, fd: FieldDescriptor, value: Any, where: str, strict: bool) -> None:
    if _is_map(fd):
        if not isinstance(value, dict):
            raise InvalidRequest(f"{where} must be an object", field=where)
        value_fd = _kind(fd).fields_by_name["value"]
        target = getattr(message, fd.name)
        for key, item in value.items():
            if value_fd.type == _MESSAGE:
                _set_message(target[key], value_fd, item, f"{where}.{key}", strict)
            else:
                target[key] = _scalar(value_fd, item, f"{where}.{key}")
    elif _is_repeated(fd):
        if not isinstance(value, list):
            raise InvalidRequest(f"{where} must be a list", field=where)
        target = getattr(message, fd.name)
        for index, item in enumerate(value):
            if fd.type == _MESSAGE:
                _set_message(target.add(), fd, item, f"{where}[{index}]", strict)
            else:
                target.append(_scalar(fd, item, f"{where}[{index}]"))
    elif fd.type == _MESSAGE:
        _set_message(getattr(message, fd.name), fd, value, where, strict)
    else:
        setattr(message, fd.name, _scalar(fd, value, where))


def _set_message(target: Message, fd: FieldDescriptor, value: Any, where: str, strict: bool) -> None:
    kind = _kind(fd).full_name
    if kind == _QUANTITY:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise InvalidRequest(f'{where} must be a quantity such as "100m"', field=where)
        target.string = str(value)  # type: ignore[attr-defined]
    elif kind == _INT_OR_STRING:
        if isinstance(value, str):
            target.type, target.strVal = 1, value  # type: ignore[attr-defined]
        elif isinstance(value, int) and not isinstance(value, bool):
            target.type, target.intVal = 0, value  # type: ignore[attr-defined]
        else:
            raise InvalidRequest(f"{where} must be an integer or a string", field=where)
    elif kind in _TIMES:
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise InvalidRequest(f"{where} must be an RFC 3339 time", field=where) from None
        whole = int(moment.timestamp())
        target.seconds, target.nanos = whole, moment.microsecond * 1000  # type: ignore[attr-defined]
    else:
        _json_to_message(value, target, where, strict)
        target.SetInParent()


_INTS = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}
_INT_RANGE = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _scalar(fd: FieldDescriptor, value: Any, where: str) -> Any:
    if fd.type in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRequest(f"{where} must be an integer", field=where)
        low, high = _INT_RANGE.get(fd.type, (-(2**63), 2**63 - 1))
        if not low <= value <= high:
            raise InvalidRequest(f"{where} is out of range", field=where)
        return value
    if fd.type == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise InvalidRequest(f"{where} must be true or false", field=where)
        return value
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidRequest(f"{where} must be a number", field=where)
        return float(value)
    if not isinstance(value, str):
        raise InvalidRequest(f"{where} must be a string", field=where)
    if fd.type != _BYTES:
        return value
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise InvalidRequest(f"{where} must be base64", field=where) from None
