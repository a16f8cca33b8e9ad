"""Refuse NUL characters in gRPC requests, as the REST guard does for JSON bodies.

PostgreSQL cannot store or compare text holding NUL, so a request carrying one would fail
deep in the database as a bug would; both databases refuse it up front instead. Pod specs
are skipped here: they are checked in their JSON form when converted (``convert.wire``).
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from armada.model.errors import InvalidRequest

_POD_SPEC = "k8s.io.api.core.v1.PodSpec"
#: A ``\u0000`` escape that is not itself escaped (preceded by an even number of backslashes).
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_STRING = FieldDescriptor.TYPE_STRING


def _nul_in(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Message):
        return value.DESCRIPTOR.full_name != _POD_SPEC and nul_field(value) is not None
    return False


def nul_field(message: Message) -> str | None:
    """The name of a field of ``message`` (at any depth) holding a NUL character, if any."""
    for fd, value in message.ListFields():
        if fd.message_type is None and fd.type != _STRING:
            continue
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            items = [item for pair in value.items() for item in pair]
        elif fd.is_repeated:
            items = list(value)
        else:
            items = [value]
        if any(_nul_in(item) for item in items):
            return fd.json_name
    return None


def reject_nul(message: Any) -> None:
    if isinstance(message, Message) and (field := nul_field(message)) is not None:
        raise InvalidRequest("the request must not contain NUL characters", field=field)


def json_has_nul(encoded: bytes) -> bool:
    """Whether JSON text (as msgspec writes it) holds a NUL character."""
    return b"\\u0000" in encoded and _NUL_ESCAPE.search(encoded) is not None
