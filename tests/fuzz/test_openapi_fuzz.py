"""Fuzz the whole REST API from its own OpenAPI document with schemathesis.

Every generated request, valid or not, must get an answer below 500; every 4xx must be an
RFC 9457 problem; a rejected request must leave the event log (hence every view) exactly
as it was; and whatever is accepted must read back from the database. Each body with
numbers is also sent again with every number spelt as the lenient decoder would take it:
as a numeric string, and as one of ``"NaN"``/``"Infinity"``/``"-Infinity"``/``"1e999"``,
the literal ``1e400`` and a 40-digit integer, in turn from one example to the next (so each
operation gets every spelling several times). Runs on SQLite and PostgreSQL. Bounded for
CI: ``ARMADA_FUZZ_EXAMPLES`` per operation (default 30); raise it to fuzz harder.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from sqlalchemy import select

from armada.eventstore import schema
from armada.model.events import decode_event
from armada.model.jobs import decode_job
from armada.model.queues import Queue
from tests.databases import DATABASE_KINDS, database_url_for
from tests.servers import ApiServer, serving

EXAMPLES = int(os.environ.get("ARMADA_FUZZ_EXAMPLES", "30"))
#: Raw JSON spellings of a number that the lenient decoder takes or that overflow a float.
HOSTILE_NUMBERS = ('"NaN"', '"Infinity"', '"-Infinity"', '"1e999"', "1e400", str(10**40))
_MARK = "\x00number\x00"


@pytest.fixture(scope="module", params=DATABASE_KINDS)
def fuzzed_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    directory = Path(tmp_path_factory.mktemp("fuzz"))
    with database_url_for(request.param, directory) as url, serving(url) as server:
        yield server


def check(case: schemathesis.Case, server: ApiServer, example: int) -> None:
    """Send one generated request (the operation's ``example``-th) and hold the answer to the
    rules above."""
    if isinstance(case.body, dict) and case.body.get("watch"):
        case.body["watch"] = False  # a watched stream never ends by itself
    head = server.head()
    if _streams_events(case.operation.definition.raw):
        _check_first_event(case, server, head)
        return
    response = case.call(base_url=server.url, timeout=30)
    request = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"[:2000]
    _judge(server, head, request, response.status_code, response.headers, response.text)
    for variant in _number_variants(case.body, HOSTILE_NUMBERS[example % len(HOSTILE_NUMBERS)]):
        head = server.head()
        sent = httpx.request(
            case.method,
            server.url + case.formatted_path,
            params=case.query,
            content=variant,
            headers={"Content-Type": "application/json"},
            timeout=30,
        )
        _judge(
            server,
            head,
            f"{case.method} {case.formatted_path} body={variant[:1500]!r}",
            sent.status_code,
            sent.headers,
            sent.text,
        )


def _streams_events(operation: dict[str, Any]) -> bool:
    """Whether the operation answers with server-sent events: a stream that never ends."""
    return any(
        "text/event-stream" in (answer.get("content") or {}) for answer in operation["responses"].values()
    )


def _check_first_event(case: schemathesis.Case, server: ApiServer, head: int) -> None:
    """Judge an event stream by its status and first line, then hang up: schemathesis reads
    a stream until its request timeout (30 s, later with 15 s keep-alives) for every example."""
    url = server.url + case.formatted_path
    with httpx.stream(case.method, url, params=case.query, headers=case.headers, timeout=30) as response:
        if response.status_code == 200:
            assert response.headers["content-type"].startswith("text/event-stream")
            text = next(response.iter_lines())
        else:
            text = response.read().decode()
        request = f"{case.method} {case.formatted_path}"
        _judge(server, head, request, response.status_code, response.headers, text)


def _judge(server: ApiServer, head: int, request: str, status: int, headers: Any, text: str) -> None:
    assert status < 500, f"{request}\n-> {status} {text}"
    if 400 <= status < 500:
        content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith("application/problem+json"), f"{request}\n-> {text}"
        assert server.head() == head, f"a rejected request changed the log: {request}"
    else:
        server.run(_assert_readable_since(server, head, request))


def _number_variants(body: Any, hostile: str) -> list[bytes]:
    """The body with each number as a numeric string, then each number spelt ``hostile``."""
    if not isinstance(body, dict | list):
        return []
    numbers: list[int | float] = []
    template = json.dumps(_mark_numbers(body, numbers))
    if not numbers:
        return []
    variants = [
        _fill(template, (json.dumps(str(n)) for n in numbers)),
        _fill(template, itertools.repeat(hostile)),
    ]
    return [variant.encode() for variant in variants]


def _mark_numbers(node: Any, numbers: list[int | float]) -> Any:
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return node
    if isinstance(node, int | float):
        numbers.append(node)
        return _MARK
    if isinstance(node, dict):
        return {key: _mark_numbers(value, numbers) for key, value in node.items()}
    if isinstance(node, list):
        return [_mark_numbers(value, numbers) for value in node]
    return node


def _fill(template: str, literals: Iterator[str]) -> str:
    parts = template.split(json.dumps(_MARK))
    return "".join(part + next(literals) for part in parts[:-1]) + parts[-1]


async def _assert_readable_since(server: ApiServer, head: int, request: str) -> None:
    """Everything an accepted request stored decodes again: events, job and queue specs."""
    events, jobs, queues = schema.events, schema.jobs, schema.queues
    async with server.store.engine.connect() as conn:
        rows = await conn.execute(
            select(events.c.seq, events.c.job_id, events.c.payload).where(events.c.seq > head)
        )
        job_ids = set()
        for seq, job_id, payload in rows:
            try:
                decode_event(payload)
            except msgspec.DecodeError as exc:
                raise AssertionError(f"{request}\n stored an unreadable event (seq {seq}): {exc}") from exc
            job_ids.add(job_id)
        for spec in await conn.scalars(select(jobs.c.spec).where(jobs.c.job_id.in_(job_ids))):
            decode_job(spec)
        for spec in await conn.scalars(select(queues.c.spec)):
            msgspec.convert(spec, Queue)


@pytest.mark.slow
def test_no_request_breaks_the_server_or_half_writes(fuzzed_server: ApiServer) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzzed_server.url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20
    for operation in operations:
        _fuzz(operation, fuzzed_server)


def _fuzz(operation: Any, server: ApiServer) -> None:
    """``EXAMPLES`` generated requests to one operation, each checked."""
    examples = itertools.count()

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,  # the same requests on every run: CI failures reproduce
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the message names the request
    )
    def fuzz(case: schemathesis.Case) -> None:
        check(case, server, next(examples))

    fuzz()
