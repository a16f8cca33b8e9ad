"""Who is calling: the one place a request's user comes from.

The access guard (:mod:`armada.api.access`) authenticates every request before its
handler runs; handlers and services only ever see the ``user`` dependency (the caller's
name, recorded as requestor and job owner).
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from armada.api.access import identity_of
from armada.auth.identity import ANONYMOUS


async def provide_user(request: Request[Any, Any, Any]) -> str:
    identity = identity_of(request)
    return identity.name if identity else ANONYMOUS
