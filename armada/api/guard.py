"""Turn hostile request bytes into 400 problems before any handler or database sees them.

Three things would otherwise escape as 500s: bodies that are not UTF-8 and JSON nested
deeper than the decoder's recursion limit (both raise outside msgspec's validation
errors), and NUL characters, which PostgreSQL cannot store in text columns or compare in
queries. A NUL can arrive as a ``\\u0000`` escape in a JSON string or as ``%00`` in the
path or query, so those are refused everywhere, on SQLite too, so both databases agree.

The URL is checked by the app's first guard, before the access guard; the body right after
authentication, inside the access guard (:func:`armada.api.access.enforce_access`): that
guard reads queue names from the path and body to look the queue up, where a NUL would reach
PostgreSQL as a 500, yet callers without valid credentials are refused before their body is
read at all. Bodies of routes whose policy needs none of it are checked (once) before the
handler, as a ``before_request`` hook.

The body is parsed with ``Request.json()``, which keeps the result for the route's own
data extraction: the check costs no second parse (lease calls carry tens of thousands of
run ids every second).
"""

from __future__ import annotations

import re
from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.exceptions import SerializationException
from litestar.handlers.base import BaseRouteHandler

from armada.api import field_paths
from armada.model.errors import InvalidRequest

#: A ``\u0000`` escape that is not itself escaped (preceded by an even number of backslashes).
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Scope key of the parsed body, for naming the field of a later validation error.
BODY_JSON = "armada.body_json"


#: Scope key set once a request's body has passed.
_CHECKED = "armada.body_checked"


async def hostile_url_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """App-wide Litestar guard, listed first: no NUL in the path or query string."""
    if "\x00" in connection.scope["path"] or b"%00" in connection.scope.get("query_string", b""):
        raise InvalidRequest("the URL must not contain NUL characters")


async def reject_hostile_input(request: Request[Any, Any, Any]) -> None:
    """Raise :class:`InvalidRequest` for an unusable body (checked once per request)."""
    if request.method not in _BODY_METHODS or request.scope.get(_CHECKED):
        return
    request.scope[_CHECKED] = True  # type: ignore[literal-required]
    body = await request.body()
    try:
        request.scope[BODY_JSON] = await request.json()  # type: ignore[literal-required]
    except UnicodeDecodeError as exc:
        detail = f"the request body is not valid UTF-8: {exc.reason} at byte {exc.start}"
        raise InvalidRequest(detail) from exc
    except RecursionError as exc:
        raise InvalidRequest("the request body's JSON is nested too deeply") from exc
    except SerializationException as exc:
        if "Number out of range" in str(exc):  # e.g. 1e400: say which field, not just "$[...]"
            raise InvalidRequest(
                "numbers must be finite: this one is beyond the range of a 64-bit float",
                field=field_paths.first_overflow(body),
            ) from exc
        # any other malformed JSON: the route's own decoding reports it, with its position
    if b"\\u0000" in body and _NUL_ESCAPE.search(body):  # the substring test spares most bodies the regex
        raise InvalidRequest("strings must not contain NUL characters (U+0000)")
