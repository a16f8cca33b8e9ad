"""A cap on the streams one caller holds open (job-set events, Lookout's change feed).

Every open stream holds a connection, a task and a wake-up on each append; without a cap,
one client opening thousands would starve everyone else. Callers are counted by user name,
except ``anonymous``, which is counted per client address (with anonymous access on, many
people may share that name). The stream past the cap is refused with 429 before anything
is sent; a slot is given back when its stream ends, fails, or is dropped unread.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from litestar.connection import ASGIConnection

from armada.api.access import identity_of
from armada.auth.identity import ANONYMOUS
from armada.model.errors import LimitExceeded

T = TypeVar("T")
#: Seconds a refused client is told to wait: streams end when their clients go away.
RETRY_AFTER = 5


class StreamQuota:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def open(
        self, connection: ASGIConnection[Any, Any, Any, Any], stream: AsyncIterator[T]
    ) -> AsyncIterator[T]:
        """``stream``, counted against its caller; raises :class:`LimitExceeded` at the cap."""
        return self.open_for(caller_key(connection), stream)

    def open_for(self, key: str, stream: AsyncIterator[T]) -> AsyncIterator[T]:
        """``stream``, counted against the caller ``key`` (other transports name it)."""
        if self._open.get(key, 0) >= self.limit:
            raise LimitExceeded(
                f"{key} already has {self.limit} streams open (server.maxStreamsPerCaller); close one first",
                retry_after=RETRY_AFTER,
            )
        self._open[key] = self._open.get(key, 0) + 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                if (left := self._open.pop(key, 1) - 1) > 0:
                    self._open[key] = left

        async def counted() -> AsyncIterator[T]:
            try:
                async for item in stream:
                    yield item
            finally:
                release()

        wrapped = counted()
        weakref.finalize(wrapped, release)  # a stream never iterated still gives its slot back
        return wrapped

    def held(self, key: str) -> int:
        return self._open.get(key, 0)


def caller_key(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    identity = identity_of(connection)
    name = identity.name if identity else ANONYMOUS
    if name == ANONYMOUS:
        return f"{ANONYMOUS}@{connection.client.host if connection.client else '?'}"
    return name
