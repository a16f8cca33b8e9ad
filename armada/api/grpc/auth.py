"""Who is calling over gRPC, and whether they may: the same decisions as the REST guard.

Credentials come from the ``authorization`` metadata (what ``armada-client`` and
``armadactl`` send) with the same Basic / Bearer / OIDC rules; permissions are asked of the
same :class:`~armada.api.access.AccessControl` methods the REST policies use.
"""

from __future__ import annotations

from typing import Any

import grpc

from armada.api.access import AccessControl
from armada.auth.identity import ANONYMOUS, Identity
from armada.auth.permissions import VERB_PERMISSION, GlobalPermission
from armada.auth.queue_changes import check_queue_change
from armada.auth.throttle import LoginThrottled
from armada.eventstore.store import EventStore
from armada.model.errors import LimitExceeded, PermissionDenied
from armada.model.queues import Queue, QueueVerb
from armada.services.queues import Authorize
from armada.services.visibility import ReadScope


def _authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            return value if isinstance(value, str) else value.decode("latin-1")
    return None


def peer_host(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The client's address without its port (``ipv4:10.0.0.1:5000`` → ``10.0.0.1``)."""
    peer = str(context.peer() or "")
    address = peer.partition(":")[2] if peer.startswith(("ipv4:", "ipv6:")) else peer
    host = address.rpartition(":")[0] or address
    return host.strip("[]")


class Caller:
    """The access decisions of one server, asked per call."""

    def __init__(self, access: AccessControl, store: EventStore) -> None:
        self.access = access
        self.store = store

    async def identify(self, context: grpc.aio.ServicerContext[Any, Any]) -> Identity:
        try:  # no acceptable credentials: Unauthenticated, which maps to UNAUTHENTICATED
            return await self.access.authentication.identify(
                _authorization(context), client=peer_host(context)
            )
        except LoginThrottled as exc:  # REST answers 429 with Retry-After
            raise LimitExceeded(str(exc), retry_after=exc.retry_after) from None

    async def requiring(
        self, context: grpc.aio.ServicerContext[Any, Any], permission: GlobalPermission
    ) -> Identity:
        """The caller, if it holds ``permission`` (REST's ``requires``)."""
        identity = await self.identify(context)
        if not self.access.permissions.has(identity, permission):
            raise PermissionDenied(
                f"{identity.name} may not do this without the {permission.value} permission"
            )
        return identity

    async def on_queue(
        self, context: grpc.aio.ServicerContext[Any, Any], queue: str, verb: QueueVerb
    ) -> Identity:
        """The caller, if it may ``verb`` on ``queue`` (REST's ``on_queue``)."""
        identity = await self.identify(context)
        if self.access.permissions.has(identity, VERB_PERMISSION[verb]):
            return identity
        if queue and await self.access.may_on_queue(self.store, identity, queue, verb):
            return identity
        raise PermissionDenied(f"{identity.name} may not {verb.value} on this queue")

    async def reads(self, context: grpc.aio.ServicerContext[Any, Any]) -> ReadScope:
        """The queues the caller may read (REST's ``watching`` routes)."""
        return self.access.read_scope(self.store, await self.identify(context))

    def stream_key(self, identity: Identity, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        """Whose quota of open streams a stream counts against (as REST's ``caller_key``)."""
        return identity.name if identity.name != ANONYMOUS else f"{ANONYMOUS}@{peer_host(context)}"

    def queue_change_checker(self, identity: Identity) -> Authorize:
        """What ``identity`` may change in a queue's definition (REST's update routes)."""

        def check(old: Queue, new: Queue) -> None:
            check_queue_change(old, new, identity, self.access.permissions)

        return check

    def may_administer_queue_security(self, identity: Identity) -> bool:
        return self.access.permissions.has(identity, GlobalPermission.ADMINISTER_QUEUE_SECURITY)
