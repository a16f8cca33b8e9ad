"""Turn hostile request bytes into 400 problems before any handler or database sees them.

Three things would otherwise escape as 500s: bodies that are not UTF-8 and JSON nested
deeper than the decoder's recursion limit (both raise outside msgspec's validation
errors), and NUL characters, which PostgreSQL cannot store in text columns or compare in
queries. A NUL can arrive as a ``\\u0000`` escape in a JSON string or as ``%00`` in the
path or query, so those are refused everywhere, on SQLite too, so both databases agree.

The URL is checked first in the access check, before authentication; the body right after
authentication, also inside the access check (:func:`armada.api.access.enforce_access`, the
app's ``before_request`` hook): it reads queue names from the path and body to look the queue
up, where a NUL would reach PostgreSQL as a 500, yet callers without valid credentials are
refused before their body is read at all. Bodies of public routes called without credentials
are checked there too, once the policy has let them through.

A route whose ``data`` is a struct gets its body decoded straight into that type, once,
and handed to Litestar's data extraction as the connection's parsed JSON (a struct passes
Litestar's conversion as it is): lease calls carry thousands of run ids and submissions
hundreds of jobs many times a second, and decoding them to JSON values first, then
converting those, cost about twice as much. A body that does not decode into its type
takes the general path instead, unchanged: it is parsed with ``Request.json()`` (kept for
the route's own data extraction, so no second parse) and Litestar's conversion reports
what is wrong, so bad requests get the same problems either way.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect
from litestar import Request
from litestar.connection import ASGIConnection
from litestar.exceptions import SerializationException
from litestar.handlers.base import BaseRouteHandler
from litestar.utils.scope.state import ScopeState

from armada.api import field_paths
from armada.model.errors import InvalidRequest

#: A ``\u0000`` escape that is not itself escaped (preceded by an even number of backslashes).
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Scope key of the parsed body, for naming the field of a later validation error.
BODY_JSON = "armada.body_json"


#: Scope key set once a request's body has passed.
_CHECKED = "armada.body_checked"


def refuse_hostile_url(connection: ASGIConnection[Any, Any, Any, Any]) -> None:
    """No NUL in the path or query string (the access check's first step)."""
    if "\x00" in connection.scope["path"] or b"%00" in connection.scope.get("query_string", b""):
        raise InvalidRequest("the URL must not contain NUL characters")


async def reject_hostile_input(request: Request[Any, Any, Any]) -> None:
    """Raise :class:`InvalidRequest` for an unusable body (checked once per request)."""
    if request.method not in _BODY_METHODS or request.scope.get(_CHECKED):
        return
    request.scope[_CHECKED] = True  # type: ignore[literal-required]
    body = await request.body()
    decode = _struct_decoder(request.route_handler)
    if decode is not None:
        try:
            # Valid UTF-8, nesting within the decoder's limit, numbers in range: all checked.
            data = decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
            pass  # the general path below says what is wrong, as for any route
        else:
            _refuse_nul(body)
            ScopeState.from_scope(request.scope).json = data
            return
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
    _refuse_nul(body)


def _refuse_nul(body: bytes) -> None:
    if b"\\u0000" in body and _NUL_ESCAPE.search(body):  # the substring test spares most bodies the regex
        raise InvalidRequest("strings must not contain NUL characters (U+0000)")


#: Each route's struct decoder (or ``None``), built on its first request.
_DECODERS: weakref.WeakKeyDictionary[BaseRouteHandler, Callable[[bytes], Any] | None] = (
    weakref.WeakKeyDictionary()
)


def _struct_decoder(handler: BaseRouteHandler) -> Callable[[bytes], Any] | None:
    """Decodes a body straight into the route's ``data`` struct, as leniently as Litestar
    converts it (numbers may arrive as strings); ``None`` for a route without one, or whose
    struct takes fields it does not know (see :func:`_parses_every_value`)."""
    if handler not in _DECODERS:
        data = handler.parsed_fn_signature.parameters.get("data")
        kind = data.annotation if data is not None else None
        typed = isinstance(kind, type) and issubclass(kind, msgspec.Struct) and _parses_every_value(kind)
        _DECODERS[handler] = msgspec.json.Decoder(kind, strict=False).decode if typed else None
    return _DECODERS[handler]


def _parses_every_value(kind: type[msgspec.Struct]) -> bool:
    """Whether decoding into ``kind`` parses every value of a body: msgspec skips the value
    of a field a struct (or a dataclass or typed dict) does not know without checking its
    numbers and text, unless the struct forbids unknown fields."""
    seen: set[type] = set()

    def parses(info: msgspec.inspect.Type) -> bool:
        if isinstance(info, msgspec.inspect.DataclassType | msgspec.inspect.TypedDictType):
            return False
        if isinstance(info, msgspec.inspect.StructType):
            if info.cls in seen:
                return True
            seen.add(info.cls)
            return info.forbid_unknown_fields and all(parses(field.type) for field in info.fields)
        # Any other type: the types it holds (a list's items, a dict's keys and values, …).
        values = [getattr(info, field.name) for field in msgspec.structs.fields(info)]
        parts = [part for value in values for part in (value if isinstance(value, tuple) else (value,))]
        return all(parses(part) for part in parts if isinstance(part, msgspec.inspect.Type))

    return parses(msgspec.inspect.type_info(kind))
