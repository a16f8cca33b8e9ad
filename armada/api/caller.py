"""Who is calling: the one place a request's user and read scope come from.

The access check (:mod:`armada.api.access`) authenticates every request before its
handler runs; handlers and services only ever see the ``user`` dependency (the caller's
name, recorded as requestor and job owner) and, for reads, the ``reads`` (or
``lookout_reads``) dependency: the queues the caller may read.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from armada.api.access import identity_of
from armada.api.services import services_of
from armada.auth.identity import ANONYMOUS, Identity
from armada.services.visibility import ReadScope

#: Stands in when no caller was authenticated (public routes): it can read nothing.
_NOBODY = Identity(name="")


def caller_name(request: Request[Any, Any, Any]) -> str:
    """Who is calling: the authenticated name, else the anonymous user."""
    identity = identity_of(request)
    return identity.name if identity else ANONYMOUS


async def provide_user(request: Request[Any, Any, Any]) -> str:
    return caller_name(request)


def _scope(request: Request[Any, Any, Any], *, lookout: bool) -> ReadScope:
    services = services_of(request.app.state)
    return services.access.read_scope(services.store, identity_of(request) or _NOBODY, lookout=lookout)


def reads_of(request: Request[Any, Any, Any]) -> ReadScope:
    """The queues the caller may read, for a handler that takes no dependency at all."""
    return _scope(request, lookout=False)


async def provide_reads(request: Request[Any, Any, Any]) -> ReadScope:
    return reads_of(request)


async def provide_lookout_reads(request: Request[Any, Any, Any]) -> ReadScope:
    return _scope(request, lookout=True)
