"""OpenAPI descriptions of what routes really answer: problem bodies and NDJSON streams.

Litestar documents its own validation error shape for 400 by default; every error here is
an RFC 9457 problem instead, and streams are NDJSON, so routes declare that explicitly.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.openapi.datastructures import ResponseSpec

from armada.api.ndjson import NDJSON
from armada.api.problems import PROBLEM_JSON

_DESCRIPTIONS = {
    400: "Invalid request: malformed JSON, a wrong type, an unknown field or a broken rule",
    403: "The caller may not do this (the detail says which permission is missing)",
    404: "The queue, job set or resource does not exist",
    409: "Conflicts with the current state (exists already, cordoned, has unfinished jobs)",
    413: "Request body too large",
    429: "A limit is reached (queued jobs in a queue, open streams); `Retry-After` when waiting helps",
    503: "The database is unavailable",
}


class Problem(msgspec.Struct, omit_defaults=True):
    """RFC 9457 problem details; ``field`` names the offending field when there is one."""

    title: str
    status: int
    detail: str
    type: str = "about:blank"
    field: str | None = None


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """Problem responses for 400 and the given statuses."""
    return {
        status: ResponseSpec(
            Problem, description=_DESCRIPTIONS[status], media_type=PROBLEM_JSON, generate_examples=False
        )
        for status in sorted({400, *statuses})
    }


def ndjson_stream(line: Any, description: str, *statuses: int) -> dict[int, ResponseSpec]:
    """A 200 NDJSON stream of ``line`` objects, plus problem responses."""
    stream = ResponseSpec(line, description=description, media_type=NDJSON, generate_examples=False)
    return {200: stream, **problems(*statuses)}
