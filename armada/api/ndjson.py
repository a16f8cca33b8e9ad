"""Newline-delimited JSON streaming responses (upstream's grpc-gateway streams)."""

from __future__ import annotations

from collections.abc import AsyncIterable

from litestar.response import Stream

NDJSON = "application/x-ndjson"


def ndjson(lines: AsyncIterable[bytes]) -> Stream:
    """Stream ``lines`` (each ending in a newline) to the client as they come."""
    return Stream(lines, media_type=NDJSON, headers={"Cache-Control": "no-store"})
