"""Which queues a caller may read, and reads filtered by them.

Reads are limited to queues the caller may ``watch``: job specs carry commands,
environment and annotations that are one team's business, not every user's. A job of a
queue the caller may not read must look exactly like a job that does not exist (not
found, ``UNKNOWN``), or its existence and state would leak through the difference.

:class:`ReadScope` is transport-neutral: it takes a predicate over queues (the caller's
grants), so the REST routes and a gRPC servicer can share it. Queue rows are read once per
scope and remembered, so a request naming a thousand jobs of three queues reads three
queues.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from armada.eventstore.job_views import job_queues, run_queues
from armada.eventstore.queue_views import queue_specs_named
from armada.eventstore.store import EventStore
from armada.model.queues import Queue
from armada.services.queues import list_queues

#: Reads the queue of each id that exists (:func:`job_queues` or :func:`run_queues`).
_QueuesOf = Callable[[AsyncConnection, Collection[str]], Awaitable[dict[str, str]]]


def _queue(spec: object) -> Queue:
    return msgspec.convert(spec, Queue)


class ReadScope:
    """The queues one caller may read: every queue, or those ``grants`` accepts."""

    def __init__(self, store: EventStore, grants: Callable[[Queue], bool], *, everything: bool) -> None:
        #: The store the scope reads from (a route that needs nothing else takes it from here:
        #: Litestar resolves a route's two or more dependencies in a task group per request).
        self.store = store
        self._grants = grants
        self.everything = everything
        self._known: dict[str, bool] = {}

    async def readable(self, names: Iterable[str]) -> set[str]:
        """Those of ``names`` the caller may read (queues that do not exist are not readable)."""
        wanted = set(names)
        if self.everything:
            return wanted
        unknown = [name for name in wanted if name not in self._known]
        if unknown:
            async with self.store.engine.connect() as conn:
                rows = await queue_specs_named(conn, unknown)
            for row in rows:
                # A queue stored in a form this version cannot read grants nothing (it is reported).
                queue = self.store.unreadable.decode(_queue, row.spec, "queue", row.name)
                self._known[row.name] = queue is not None and self._grants(queue)
            for name in unknown:
                self._known.setdefault(name, False)
        return {name for name in wanted if self._known[name]}

    async def may_read(self, name: str) -> bool:
        return bool(await self.readable([name]))

    async def queue_names(self) -> list[str] | None:
        """Every queue the caller may read, or ``None`` for "all of them" (nothing to filter)."""
        if self.everything:
            return None
        names = []
        for queue in await list_queues(self.store):
            self._known[queue.name] = self._grants(queue)
            if self._known[queue.name]:
                names.append(queue.name)
        return names

    async def jobs(self, job_ids: Sequence[str]) -> list[str]:
        """The ids of ``job_ids`` that exist in queues the caller may read, in the order given."""
        return await self._keys(job_queues, job_ids)

    async def runs(self, run_ids: Sequence[str]) -> list[str]:
        """The ids of ``run_ids`` that exist in queues the caller may read, in the order given."""
        return await self._keys(run_queues, run_ids)

    def shown(self, queue: Queue) -> Queue:
        """``queue`` as the caller may see it: who owns it and who may do what on it are
        for its watchers only (they tell an attacker whose credentials to go after).
        Decided from ``queue`` itself: listing a thousand queues reads nothing more."""
        if self.everything:
            return queue
        self._known[queue.name] = self._grants(queue)
        if self._known[queue.name]:
            return queue
        return msgspec.structs.replace(queue, user_owners=[], group_owners=[], permissions=[])

    async def _keys(self, queues_of: _QueuesOf, ids: Sequence[str]) -> list[str]:
        if self.everything or not ids:
            return list(ids)
        async with self.store.engine.connect() as conn:
            queue_of = await queues_of(conn, ids)
        readable = await self.readable(queue_of.values())
        return [i for i in ids if queue_of.get(i) in readable]
