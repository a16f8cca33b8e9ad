"""Protobuf messages ⇄ our msgspec wire types.

Requests are turned into the JSON-shaped dict upstream's grpc-gateway would have produced
and then *converted* (``msgspec.convert``) into the same wire types the REST routes decode,
so that every bound and rule applies to both transports alike.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypeVar

import msgspec
from google.protobuf import json_format
from google.protobuf.message import Message

from armada.api.grpc.guard import json_has_nul
from armada.model.errors import InvalidRequest

_encode = msgspec.json.Encoder().encode
#: grpc ships no type stubs, so a servicer's context is typed loosely.
Context: TypeAlias = Any
T = TypeVar("T")
M = TypeVar("M", bound=Message)


def to_dict(message: Message) -> dict[str, Any]:
    """The proto3 JSON form of ``message`` (camelCase names, defaults left out)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=False)


_decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _decoder(kind: type[T]) -> msgspec.json.Decoder[T]:
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    return decoder


def wire(data: Any, kind: type[T]) -> T:
    """``data`` as wire type ``kind``, decoded from JSON exactly as a REST body is; a
    violation is :class:`InvalidRequest` naming the field. NUL characters (here: in pod
    specs, which ``guard`` leaves to this check) are refused."""
    encoded = _encode(data)
    if json_has_nul(encoded):
        raise InvalidRequest("the request must not contain NUL characters")
    try:
        decoded: T = _decoder(kind).decode(encoded)
        return decoded
    except msgspec.ValidationError as exc:
        message = str(exc)
        field = message.rpartition("at `$")[2].rstrip("`").lstrip(".") if "at `$" in message else None
        raise InvalidRequest(message, field=field or None) from None


def to_proto(value: Any, kind: type[M]) -> M:
    """A response built from our wire value (fields protobuf lacks are left out)."""
    message = kind()
    json_format.ParseDict(msgspec.to_builtins(value), message, ignore_unknown_fields=True)
    return message
