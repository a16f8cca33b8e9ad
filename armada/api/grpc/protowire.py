"""Protobuf's wire format, just enough to compose a message from parts already serialized.

A serialized message is a sequence of fields in any order, and a nested message is a
length-delimited field holding its bytes, so a hot path can splice cached bytes (a job
set's shared pod spec) into a message instead of copying protobuf objects into it, and
wrap a serialized inner message without building its outer ones. Parsers read the result
exactly as if the whole message had been built and serialized at once.
"""

from __future__ import annotations

from functools import cache

_LENGTH_DELIMITED = 2


def varint(value: int) -> bytes:
    """An unsigned varint (``value`` >= 0)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@cache
def _tag(number: int) -> bytes:
    return varint(number << 3 | _LENGTH_DELIMITED)


def field(number: int, payload: bytes) -> bytes:
    """Length-delimited field ``number`` (a string, bytes or nested message) holding ``payload``."""
    return _tag(number) + varint(len(payload)) + payload


def string(number: int, value: str) -> bytes:
    """String field ``number``; nothing for ``""`` (proto3 leaves defaults out)."""
    return field(number, value.encode()) if value else b""
