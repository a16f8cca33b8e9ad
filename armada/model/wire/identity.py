"""``GET /v1/whoami``: who the server takes the caller for (``armada jobs --owner me``, Lookout's header)."""

from __future__ import annotations

from armada.model.wire.base import Response


class WhoAmI(Response):
    """The caller's name as recorded as job owner and requestor, and its groups."""

    name: str
    groups: list[str] = []
