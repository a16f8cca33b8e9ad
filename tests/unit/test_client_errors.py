"""The client's error tree: an answer's status picks its class, no answer is a transport error."""

from __future__ import annotations

import httpx
import pytest

from armada.client import (
    AccessRefused,
    ArmadaApiError,
    ArmadaClient,
    ArmadaClientError,
    ArmadaTransportError,
    BadRequest,
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServerError,
    TooManyRequests,
    Unauthenticated,
)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, BadRequest),
        (401, Unauthenticated),
        (403, PermissionDenied),
        (404, NotFound),
        (409, Conflict),
        (429, TooManyRequests),
        (503, ServerError),
        (418, ArmadaApiError),
    ],
)
def test_a_status_picks_its_class(status: int, kind: type[ArmadaApiError]) -> None:
    problem = {"title": "t", "detail": "why", "field": "queue"}
    error = ArmadaApiError.from_response(httpx.Response(status, json=problem))
    assert type(error) is kind and isinstance(error, ArmadaClientError)
    assert (error.status, error.detail, error.field) == (status, "why", "queue")
    assert str(error) == "why (field queue)"
    assert InvalidArgument is BadRequest
    assert isinstance(error, AccessRefused) == (status in (401, 403))


def test_a_server_out_of_reach_is_a_transport_error_of_both_trees() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with ArmadaClient("http://armada", transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(ArmadaTransportError) as caught:
            client.get_queue("q")
        with pytest.raises(httpx.TransportError):  # code written before the tree still works
            list(client.job_set_events("q", "s", watch=False, from_message_id=""))
    assert str(caught.value) == "connection refused" and caught.value.retryable
