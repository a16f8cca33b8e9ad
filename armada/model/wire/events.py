"""The job-set event stream: request body and line format.

Each line is ``{"result": {"id": "<seq>", "message": {"<type>": {...event fields...}}}}``,
the shape of upstream's ``apiEventStreamMessage`` behind grpc-gateway. A stream that ends
in an error ends with a last line ``{"error": {"code": <gRPC code>, "message": "...",
"details": []}}``, as grpc-gateway ends one.
"""

from __future__ import annotations

from typing import Any

import msgspec

from armada.model.events import AnyEvent, Event
from armada.model.wire.base import Request


class JobSetRequest(Request):
    watch: bool = False
    from_message_id: str = ""
    error_if_missing: bool = False
    # Upstream repeats the path parameters in the body; accepted and checked.
    queue: str = ""
    id: str = ""


_encoder = msgspec.json.Encoder()


def encode_stream_line(message_id: int, event: Event) -> bytes:
    """One NDJSON line of the stream (with its newline)."""
    fields = msgspec.to_builtins(event)
    kind = fields.pop("type")
    return _encoder.encode({"result": {"id": str(message_id), "message": {kind: fields}}}) + b"\n"


#: gRPC status code of a stream ended because its caller may no longer watch the queue.
PERMISSION_DENIED = 7
#: gRPC status code of a stream ended because the log went back in time behind it.
ABORTED = 10


class StreamError(ValueError):
    """The error line that ended a stream: ``code`` is its gRPC status code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def encode_stream_error(code: int, message: str) -> bytes:
    """The last line of a stream that ends in an error (with its newline)."""
    return _encoder.encode({"error": {"code": code, "message": message, "details": []}}) + b"\n"


def decode_stream_line(line: bytes | str) -> tuple[str, AnyEvent]:
    """The message id and the event of one stream line; raises :class:`StreamError` on an error line."""
    data: dict[str, Any] = msgspec.json.decode(line)
    if "error" in data and "result" not in data:
        error = data["error"]
        if isinstance(error, dict):
            raise StreamError(int(error.get("code", 2)), str(error.get("message", error)))
        raise StreamError(2, str(error))  # 2: UNKNOWN
    result = data["result"]
    ((kind, fields),) = result["message"].items()
    event: AnyEvent = msgspec.convert({**fields, "type": kind}, AnyEvent)
    return str(result["id"]), event


class EventStreamMessage(msgspec.Struct):
    """Documentation shape of one stream line's ``result``: ``message`` has one key, the event type."""

    id: str
    message: dict[str, dict[str, Any]]


class EventStreamLine(msgspec.Struct):
    result: EventStreamMessage
