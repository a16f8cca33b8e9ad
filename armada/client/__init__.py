"""Typed HTTP clients of Armada's job and queue API (sync and asyncio), over httpx.

from armada.client import ArmadaClient
with ArmadaClient("http://127.0.0.1:8080") as client:
    client.create_queue(Queue(name="example"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from armada.lazy import lazy_exports

if TYPE_CHECKING:
    from armada.client.aio import AsyncArmadaClient
    from armada.client.calls import StreamedEvent
    from armada.client.config import ClientConfig, ConfigError, load_config
    from armada.client.errors import (
        AccessRefused,
        ArmadaApiError,
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
        UnexpectedResponse,
    )
    from armada.client.sync import ArmadaClient

__all__ = [
    "AccessRefused",
    "ArmadaApiError",
    "ArmadaClient",
    "ArmadaClientError",
    "ArmadaTransportError",
    "AsyncArmadaClient",
    "BadRequest",
    "ClientConfig",
    "ConfigError",
    "Conflict",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ServerError",
    "StreamedEvent",
    "TooManyRequests",
    "Unauthenticated",
    "UnexpectedResponse",
    "load_config",
]

# A CLI command loads the blocking client only; the executor, the asyncio one only.
__getattr__ = lazy_exports(
    __name__,
    {
        "AsyncArmadaClient": "armada.client.aio",
        "StreamedEvent": "armada.client.calls",
        "ClientConfig": "armada.client.config",
        "ConfigError": "armada.client.config",
        "load_config": "armada.client.config",
        "AccessRefused": "armada.client.errors",
        "ArmadaApiError": "armada.client.errors",
        "ArmadaClientError": "armada.client.errors",
        "ArmadaTransportError": "armada.client.errors",
        "BadRequest": "armada.client.errors",
        "Conflict": "armada.client.errors",
        "InvalidArgument": "armada.client.errors",
        "NotFound": "armada.client.errors",
        "PermissionDenied": "armada.client.errors",
        "ServerError": "armada.client.errors",
        "TooManyRequests": "armada.client.errors",
        "Unauthenticated": "armada.client.errors",
        "UnexpectedResponse": "armada.client.errors",
        "ArmadaClient": "armada.client.sync",
    },
)
