"""``GET /v1/version``: what a server runs, so that an upgrade can be followed replica by replica."""

from __future__ import annotations

import msgspec


class ServerVersion(msgspec.Struct, rename="camel", kw_only=True):
    """The server's version and its database's schema next to the newest one it knows."""

    version: str
    #: The database's schema revision (during a rolling upgrade, possibly newer than ``schemaHead``).
    schema_revision: str | None = None
    #: The newest schema revision this server's version knows.
    schema_head: str = ""
    #: The executor protocol this server speaks (docs/development.md, "Compatibility").
    executor_protocol: int = 0
