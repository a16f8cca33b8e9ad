"""Typed HTTP client for the executor endpoints of the Armada server."""

from __future__ import annotations

import ssl
from types import TracebackType
from typing import Self, TypeVar

import httpx
import msgspec

from armada.client.errors import ArmadaApiError, ArmadaTransportError, UnexpectedResponse
from armada.client.transport import client_transport
from armada.model.leases import EventsAccepted, LeaseRequest, LeaseResponse, LogAnswer, RunEventBatch

T = TypeVar("T")


class ExecutorApiClient:
    """``POST /v1/executor/lease``, ``/events`` and ``/logs`` over one connection pool.

    Calls raise the client's :class:`~armada.client.errors.ArmadaClientError` tree: a refused
    credential is an :class:`~armada.client.errors.AccessRefused`.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str = "",
        ca_cert: str = "",
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        verify = ssl.create_default_context(cafile=ca_cert) if ca_cert else True
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            verify=verify,
            transport=transport or client_transport(verify),
        )

    async def lease(self, request: LeaseRequest) -> LeaseResponse:
        """Heartbeat: report nodes and runs; get leases and kill orders.

        The read timeout is stretched by the long-poll wait the request allows.
        """
        base = self._http.timeout
        read = None if base.read is None else base.read + request.wait_millis / 1000
        timeout = httpx.Timeout(connect=base.connect, read=read, write=base.write, pool=base.pool)
        return await self._post("/v1/executor/lease", request, LeaseResponse, limits=timeout)

    async def report_events(self, batch: RunEventBatch) -> None:
        """Deliver a batch of run events (the server deduplicates by event id)."""
        await self._post("/v1/executor/events", batch, EventsAccepted)

    async def answer_log(self, answer: LogAnswer) -> None:
        """Deliver the answer to a log request a lease call carried (404: nobody waits now)."""
        await self._post("/v1/executor/logs", answer, EventsAccepted)

    async def _post(
        self, path: str, body: msgspec.Struct, response_type: type[T], *, limits: httpx.Timeout | None = None
    ) -> T:
        try:
            response = await self._http.post(
                path, content=msgspec.json.encode(body), timeout=limits or self._http.timeout
            )
        except httpx.TransportError as exc:
            raise ArmadaTransportError(f"{path}: {type(exc).__name__}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise UnexpectedResponse(f"{path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 300:
            raise ArmadaApiError.from_response(response)
        try:
            return msgspec.json.decode(response.content or b"{}", type=response_type)
        except msgspec.DecodeError as exc:
            raise UnexpectedResponse(f"{path}: bad response: {exc}") from exc

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
