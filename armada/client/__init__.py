"""Typed HTTP clients of Armada's job and queue API (sync and asyncio), over httpx.

from armada.client import ArmadaClient
with ArmadaClient("http://127.0.0.1:8080") as client:
    client.create_queue(Queue(name="example"))
"""

from armada.client.aio import AsyncArmadaClient
from armada.client.calls import StreamedEvent
from armada.client.config import ClientConfig, ConfigError, load_config
from armada.client.errors import ArmadaApiError
from armada.client.sync import ArmadaClient

__all__ = [
    "ArmadaApiError",
    "ArmadaClient",
    "AsyncArmadaClient",
    "ClientConfig",
    "ConfigError",
    "StreamedEvent",
    "load_config",
]
