"""What the scheduler service needs of the event store, as a Protocol.

:class:`armada.eventstore.store.EventStore` is the one implementation; stating the needs
here keeps the scheduler's dependency on the store to these calls (the views it reads go
through the functions of :mod:`armada.eventstore` on a connection).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from armada.eventstore.store import Draft, Lane, StoredEvent, Transaction
from armada.eventstore.unreadable import UnreadableRecords
from armada.model.events import Event

DraftT = TypeVar("DraftT", bound=Draft)


class SchedulerStore(Protocol):
    """The log the scheduler follows and appends its decisions and run events to."""

    @property
    def engine(self) -> AsyncEngine: ...

    @property
    def unreadable(self) -> UnreadableRecords: ...

    def transaction(self, *, lane: Lane = ...) -> AbstractAsyncContextManager[Transaction]: ...

    async def append(self, events: Sequence[Event], *, lane: Lane = ...) -> int: ...

    async def append_optimistically(
        self, build: Callable[[AsyncConnection], Awaitable[DraftT]], *, lane: Lane = ...
    ) -> DraftT: ...

    async def append_checked(
        self,
        draft: DraftT,
        seen: int,
        rebuild: Callable[[AsyncConnection], Awaitable[DraftT]],
        *,
        lane: Lane = ...,
    ) -> tuple[DraftT, int]: ...

    @property
    def known_head(self) -> int:
        """The newest seq this process knows committed (its own appends, and those it was told of)."""
        ...

    async def head(self) -> int: ...

    async def read(self, after_seq: int = ..., *, limit: int = ...) -> list[StoredEvent]: ...

    def rewind(self, head: int) -> None: ...

    async def wait_for_change(self, after_seq: int, timeout: float | None = ...) -> int: ...
