"""Log reads are bounded (issue 34, finding 5): so many waiting per caller and per executor
(429 with ``Retry-After``), so many lines and bytes per answer, nothing left in the mailbox.
Against a real server on both databases, the test standing in for the executor over HTTP.
"""

from __future__ import annotations

import threading
from typing import Any

import grpc
import httpx
import pytest
from armada_client.armada import binoculars_pb2, binoculars_pb2_grpc
from sqlalchemy import func, select
from typer.testing import CliRunner

from armada.api.settings import ServerSettings
from armada.auth.identity import ANONYMOUS
from armada.auth.secrets import hash_token
from armada.auth.settings import AuthSettings, StaticToken
from armada.cli.main import app
from armada.eventstore.schema import log_requests
from armada.scheduler.settings import SchedulerServiceSettings
from armada.scheduling.config import SchedulingConfig
from armada.settings import Settings
from tests.api.log_reads import Executor, Running, answer, lease_call, run_a_job
from tests.processes import free_port
from tests.servers import ApiServer

MAX_BYTES = 4096
MAX_LINES = 100
#: Far longer than any step of a test: reads end when the test answers them, never by timing out.
LOG_WAIT = 60.0
#: A chatty job's answer: ~30 KB, far over ``MAX_BYTES``.
CHATTY = [{"timestamp": f"2026-11-24T03:00:00.{i:09d}Z", "line": f"{i} " + "y" * 120} for i in range(250)]


def user(name: str) -> StaticToken:
    """A token ``<name>-token`` with every permission anonymous callers have (watch included)."""
    return StaticToken(user=name, token_hash=hash_token(f"{name}-token"), groups=[ANONYMOUS])


@pytest.fixture(scope="module")
def settings() -> Settings:
    # No periodic forecasts: the in-process server's debug line about them would land in the
    # stdout that ``CliRunner`` captures from ``armada logs``.
    return Settings(
        scheduling=SchedulingConfig(forecast_interval=0),
        server=ServerSettings(grpc_port=free_port()),
        auth=AuthSettings(tokens=[user("alice"), user("bob"), user("carol")]),
        scheduler=SchedulerServiceSettings(
            log_wait_seconds=LOG_WAIT,
            max_log_reads_per_caller=2,
            max_log_reads_per_executor=3,
            max_log_bytes=MAX_BYTES,
            max_log_lines=MAX_LINES,
        ),
    )


@pytest.fixture
def running(server: ApiServer) -> Running:
    return run_a_job(server, server)


def read_as(server: ApiServer, name: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {name}-token"}
    return httpx.post(f"{server.url}/v1/binoculars/log", json=body, headers=headers, timeout=LOG_WAIT + 30)


class Reader(threading.Thread):
    """One log read by ``name``, left waiting until the test answers it."""

    def __init__(self, server: ApiServer, name: str, job_id: str) -> None:
        super().__init__(daemon=True)
        self.server, self.name, self.job_id = server, name, job_id
        self.response: httpx.Response | None = None

    def run(self) -> None:
        self.response = read_as(self.server, self.name, {"jobId": self.job_id})


def take_orders(server: ApiServer, run_id: str, count: int) -> list[dict[str, Any]]:
    """Long-poll as the executor until ``count`` log requests have been handed out."""
    orders: list[dict[str, Any]] = []
    while len(orders) < count:
        orders += lease_call(server, {run_id: "running"}, wait_millis=10_000).get("logRequests", [])
    assert len(orders) == count
    return orders


def mailbox_rows(server: ApiServer) -> int:
    async def count() -> int:
        async with server.store.engine.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(log_requests))).scalar_one())

    return server.run(count())


def test_reads_past_the_caps_are_429_and_answers_are_bounded(
    server: ApiServer, running: Running, settings: Settings
) -> None:
    """Ten concurrent reads of a chatty job (the review's repro), against caps of 2 per caller
    and 3 per executor: the extras are refused at once (over gRPC too), what is answered holds at most
    ``maxLogBytes``, and the mailbox is empty afterwards."""
    waiting = [Reader(server, "alice", running.job_id) for _ in range(2)]
    for reader in waiting:
        reader.start()
    orders = take_orders(server, running.run_id, 2)

    refused = read_as(server, "alice", {"jobId": running.job_id})
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == "2"
    assert "scheduler.maxLogReadsPerCaller" in refused.json()["detail"]
    with grpc.insecure_channel(f"127.0.0.1:{settings.server.grpc_port}") as channel:
        stub = binoculars_pb2_grpc.BinocularsStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as caught:
            stub.Logs(
                binoculars_pb2.LogRequest(job_id=running.job_id),
                metadata=[("authorization", "Bearer alice-token")],
                timeout=30,
            )
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    waiting.append(Reader(server, "bob", running.job_id))  # another caller: the executor's third
    waiting[-1].start()
    orders += take_orders(server, running.run_id, 1)
    extras = [read_as(server, "carol", {"jobId": running.job_id}) for _ in range(7)]
    assert [response.status_code for response in extras] == [429] * 7
    assert "scheduler.maxLogReadsPerExecutor" in extras[0].json()["detail"]

    assert {(order["tailLines"], order["maxBytes"]) for order in orders} == {(MAX_LINES, MAX_BYTES)}
    for order in orders:  # the executor sends more than asked: the server trims it anyway
        assert answer(server, {"requestId": order["requestId"], "lines": CHATTY}).status_code == 200
    for reader in waiting:
        reader.join(LOG_WAIT + 30)
        assert reader.response is not None and reader.response.status_code == 200
        assert len(reader.response.content) <= MAX_BYTES + len('{"log":}')
        lines = reader.response.json()["log"]
        assert 0 < len(lines) < len(CHATTY) and lines[-1] == CHATTY[-1]  # the newest lines
    assert mailbox_rows(server) == 0
    # The slots were given back: the caller may read again.
    executor = Executor(server, running.run_id, {"lines": CHATTY[:3]})
    executor.start()
    executor.polling.wait()
    again = read_as(server, "alice", {"jobId": running.job_id})
    executor.join(30)
    assert again.status_code == 200 and again.json()["log"] == CHATTY[:3]
    assert mailbox_rows(server) == 0


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"tailLines": MAX_LINES + 1}, "logOptions.tailLines"),
        ({"limitBytes": MAX_BYTES + 1}, "logOptions.limitBytes"),
    ],
)
def test_tail_and_byte_limits_over_the_maximum_are_400(
    server: ApiServer, running: Running, options: dict[str, int], field: str
) -> None:
    response = read_as(server, "alice", {"jobId": running.job_id, "logOptions": options})
    assert (response.status_code, response.json()["field"]) == (400, field), response.text
    assert mailbox_rows(server) == 0


def test_a_busy_executor_is_429(server: ApiServer, running: Running) -> None:
    executor = Executor(server, running.run_id, {"busy": True})
    executor.start()
    executor.polling.wait()
    response = read_as(server, "alice", {"jobId": running.job_id})
    executor.join(30)
    assert response.status_code == 429, response.text
    assert response.headers["Retry-After"] == "2"
    assert "executor.maxLogReads" in response.json()["detail"]
    assert mailbox_rows(server) == 0


HOSTILE = "\x1b]0;owned\x07\x1b[2Jcleared\u202eevil\x9b31m\rover"


def test_armada_logs_escapes_terminal_controls_unless_raw(server: ApiServer, running: Running) -> None:
    for raw in (False, True):
        executor = Executor(server, running.run_id, {"lines": [{"line": HOSTILE}, {"line": "tab\tkept"}]})
        executor.start()
        executor.polling.wait()
        args = ["logs", running.job_id, *(["--raw"] if raw else [])]
        result = CliRunner().invoke(app, args, env={"ARMADA_URL": server.url}, color=True)
        executor.join(30)
        assert result.exit_code == 0, result.output
        if raw:
            assert result.stdout == f"{HOSTILE}\ntab\tkept\n"
        else:
            assert result.stdout == (
                "\\x1b]0;owned\\x07\\x1b[2Jcleared\\u202eevil\\x9b31m\\x0dover\ntab\tkept\n"
            )
