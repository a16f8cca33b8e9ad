"""Bodies decoded straight into their route's struct (``armada.api.guard``).

The decoding must take exactly what Litestar's lenient conversion of the parsed JSON takes,
with the same values, and refuse exactly what it refuses (a refused body then takes the
general path, whose problems the hostile-input tests check); and a valid body must be
decoded once, never parsed to JSON values first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import litestar.connection.request
import litestar.serialization
import msgspec
import pytest
from litestar.routes import HTTPRoute

from armada.api.guard import _struct_decoder
from armada.model.leases import LeaseRequest, LogAnswer, RunEventBatch
from armada.model.wire.jobs import JobSubmitRequest
from tests.api.jobs import raw_item
from tests.servers import EXECUTOR_HEADERS, ApiServer

#: A run event with the fields that default to something new each time (id, time) given.
_RUN = {"eventId": "ev-1", "runId": "run-1", "jobId": "job-1", "time": "2026-11-27T02:00:00Z"}
_NODE = {"name": "n", "allocatable": {"cpu": "4"}}
#: Bodies for every struct route: most are refused by both sides (missing fields).
ANY_ROUTE: list[bytes] = [b"", b"null", b"{}", b"[]", b'{"unknownField": 1}', b"{", b"\xff", b"1e400"]
#: Bodies for the busiest routes: valid, lenient (numbers and booleans as strings) and hostile.
BODIES: dict[type[msgspec.Struct], list[Any]] = {
    LeaseRequest: [
        {"executorId": "e", "pool": "p", "runs": {"r1": "running", "r2": "leased"}, "maxNewLeases": 5},
        {"executorId": "e", "pool": "p", "maxNewLeases": "5", "waitMillis": "100"},
        {"executorId": "e", "pool": "p", "maxNewLeases": "NaN"},
        {"executorId": "e", "pool": "p", "maxNewLeases": 10**40},
        {"executorId": "e", "pool": "p", "waitMillis": 10_001},
        {"executorId": "e", "pool": "p", "runs": {"r1": "flying"}},
        {"executorId": "e", "pool": "p", "nodes": [{**_NODE, "ready": "no"}]},
        {"executorId": "e", "pool": "p", "nodes": [{**_NODE, "unschedulable": "true"}]},
        {"executorId": "e", "pool": "p", "nodes": [{"name": "n", "taints": [{"key": "k", "extra": 1}]}]},
        {"executorId": 7, "pool": "p"},
    ],
    RunEventBatch: [
        {"executorId": "e", "events": [{**_RUN, "kind": "running"}]},
        {"executorId": "e", "events": [{**_RUN, "kind": "failed", "exitCode": "3", "retryable": "false"}]},
        {"executorId": "e", "events": [{**_RUN, "kind": "failed", "exitCode": "Infinity"}]},
        {"executorId": "e", "events": [{**_RUN, "kind": "ingressInfo", "ingressAddresses": {"8080": "h:1"}}]},
        {"executorId": "e", "events": [{**_RUN, "kind": "ingressInfo", "ingressAddresses": {"x": "h:1"}}]},
        {"executorId": "e", "events": [{**_RUN, "kind": "exploded"}]},
        {"executorId": "e", "events": [{**_RUN, "kind": "running", "time": "yesterday"}]},
    ],
    JobSubmitRequest: [
        {"queue": "q", "jobSetId": "s", "jobRequestItems": [raw_item(), raw_item(priority="2")]},
        {"queue": "q", "jobSetId": "s", "jobRequestItems": [raw_item(priority="NaN")]},
        {"queue": "q", "jobSetId": "s", "jobRequestItems": [raw_item(priority=1e308)]},
        {"queue": "q", "jobSetId": "s", "jobRequestItems": [raw_item(podSpec={"deep": [[[[[1]]]]]})]},
        {"queue": "q", "jobSetId": "s", "jobRequestItems": "none"},
    ],
}


def _converted(kind: type[msgspec.Struct], body: bytes) -> tuple[str, bytes]:
    """What Litestar makes of ``body``: the parsed JSON converted as its signature model does."""
    try:
        value = msgspec.convert(msgspec.json.decode(body or b"null"), kind, strict=False, str_keys=True)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return ("refused", b"")
    return ("taken", msgspec.json.encode(value))


def _decoded(kind: type[msgspec.Struct], body: bytes, decode: Any) -> tuple[str, bytes]:
    try:
        value = decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return ("refused", b"")
    assert isinstance(value, kind)
    return ("taken", msgspec.json.encode(value))


def test_struct_bodies_are_taken_and_refused_as_litestar_converts_them(server: ApiServer) -> None:
    handlers = [
        handler
        for route in server.app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
        if "data" in handler.parsed_fn_signature.parameters
    ]
    decoders = {
        decode: handler.parsed_fn_signature.parameters["data"].annotation
        for handler in handlers
        if (decode := _struct_decoder(handler)) is not None
    }
    kinds = set(decoders.values())
    assert {LeaseRequest, RunEventBatch, JobSubmitRequest} <= kinds
    # A struct that takes fields it does not know (a log line, inside a log answer) would
    # let their values through unparsed: its route keeps the general path.
    assert LogAnswer not in kinds
    assert any(handler.parsed_fn_signature.parameters["data"].annotation is LogAnswer for handler in handlers)
    taken = 0
    for decode, kind in decoders.items():
        bodies = ANY_ROUTE + [json.dumps(body).encode() for body in BODIES.get(kind, [])]
        for body in bodies:
            decoded = _decoded(kind, body, decode)
            assert decoded == _converted(kind, body), (kind.__name__, body)
            taken += decoded[0] == "taken"
    assert taken >= 8  # the valid and lenient bodies above, at least


@pytest.fixture
def generic_parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The bodies Litestar parses to JSON values in this process (the in-process server's)."""
    parsed: list[bytes] = []
    parse = litestar.serialization.decode_json

    def counted(value: bytes, *args: Any, **kwargs: Any) -> Any:
        parsed.append(value)
        return parse(value, *args, **kwargs)

    monkeypatch.setattr(litestar.connection.request, "decode_json", counted)
    yield parsed


def test_a_valid_body_is_decoded_once_and_a_bad_one_still_names_its_field(
    server: ApiServer, queue: str, generic_parses: list[bytes]
) -> None:
    submit = {"queue": queue, "jobSetId": "once", "jobRequestItems": [raw_item()]}
    accepted = httpx.post(f"{server.url}/v1/job/submit", json=submit, timeout=30)
    assert accepted.status_code == 200, accepted.text
    lease = {"executorId": "cluster-once", "pool": "default", "nodes": [], "maxNewLeases": "3"}
    leased = httpx.post(f"{server.url}/v1/executor/lease", json=lease, headers=EXECUTOR_HEADERS, timeout=30)
    assert leased.status_code == 200, leased.text
    assert generic_parses == []

    bad = {**submit, "jobRequestItems": [raw_item(priority="high")]}
    refused = httpx.post(f"{server.url}/v1/job/submit", json=bad, timeout=30)
    assert refused.status_code == 400, refused.text
    assert refused.json()["field"] == "jobRequestItems[0].priority"
    assert len(generic_parses) == 1


@pytest.mark.parametrize("junk", [b"1e400", b'"\xff"'], ids=["number out of range", "not UTF-8"])
def test_a_value_nobody_reads_is_still_checked(server: ApiServer, junk: bytes) -> None:
    """A log line's unknown field is skipped by a typed decoder: the general path checks it."""
    body = b'{"executorId": "hostile-executor", "requestId": "r", "lines": [{"line": "x", "junk": JUNK}]}'
    response = server.send_json("POST", "/v1/executor/logs", body.replace(b"JUNK", junk), timeout=30)
    assert response.status_code == 400, response.text
