"""The executor API client over httpx's in-memory transport (no network)."""

from __future__ import annotations

import httpx
import msgspec
import pytest

from armada.client.errors import ArmadaClientError, ArmadaTransportError, ServerError, Unauthenticated
from armada.client.executor_api import ExecutorApiClient
from armada.model.leases import LeaseRequest, LeaseResponse, RunEvent, RunEventBatch


def client_for(handler: httpx.MockTransport) -> ExecutorApiClient:
    return ExecutorApiClient("http://armada", token="tok", timeout=5.0, transport=handler)


async def test_lease_sends_the_request_and_stretches_the_read_timeout() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = msgspec.json.encode(LeaseResponse(cancel_runs=["r9"]))
        return httpx.Response(200, content=body)

    async with client_for(httpx.MockTransport(handle)) as api:
        response = await api.lease(LeaseRequest(executor_id="c1", pool="p", wait_millis=2000))
    assert response.cancel_runs == ["r9"]
    [request] = seen
    assert request.url.path == "/v1/executor/lease"
    assert request.headers["authorization"] == "Bearer tok"
    assert msgspec.json.decode(request.content) == {"executorId": "c1", "pool": "p", "waitMillis": 2000}
    assert request.extensions["timeout"]["read"] == 7.0


@pytest.mark.parametrize(
    ("status", "retryable"), [(503, True), (429, True), (401, True), (400, False), (422, False)]
)
async def test_errors_say_whether_to_retry(status: int, retryable: bool) -> None:
    transport = httpx.MockTransport(lambda _: httpx.Response(status, text="nope"))
    async with client_for(transport) as api:
        with pytest.raises(ArmadaClientError) as caught:
            await api.report_events(
                RunEventBatch(executor_id="c1", events=[RunEvent(run_id="r", job_id="j", kind="running")])
            )
    assert (caught.value.status, caught.value.retryable) == (status, retryable)


async def test_connection_errors_are_retryable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with client_for(httpx.MockTransport(refuse)) as api:
        with pytest.raises(ArmadaClientError) as caught:
            await api.lease(LeaseRequest(executor_id="c1", pool="p"))
    assert caught.value.retryable and caught.value.status is None
    assert isinstance(caught.value, ArmadaTransportError)


@pytest.mark.parametrize(("status", "kind"), [(401, Unauthenticated), (503, ServerError)])
async def test_errors_are_of_the_client_error_tree(status: int, kind: type[ArmadaClientError]) -> None:
    problem = {"title": "no", "detail": "the token is not valid"}
    transport = httpx.MockTransport(lambda _: httpx.Response(status, json=problem))
    async with client_for(transport) as api:
        with pytest.raises(kind) as caught:
            await api.lease(LeaseRequest(executor_id="c1", pool="p"))
    assert str(caught.value) == "the token is not valid"


def test_requests_reject_unknown_fields_but_responses_tolerate_them() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"executorId": "c", "pool": "p", "bogus": 1}', type=LeaseRequest)
    decoded = msgspec.json.decode(b'{"leases": [], "futureField": true}', type=LeaseResponse)
    assert decoded == LeaseResponse()
