"""Who is calling: the one place a request's user comes from.

Until authentication lands every caller is ``anonymous``; handlers and services only ever
see the ``user`` dependency, so adding auth changes this module alone.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

ANONYMOUS = "anonymous"


async def provide_user(request: Request[Any, Any, Any]) -> str:
    return ANONYMOUS
