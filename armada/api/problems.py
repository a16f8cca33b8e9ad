"""RFC 9457 problem responses for every error a client can cause.

Handlers turn :class:`~armada.model.errors.ArmadaError`, Litestar's own HTTP errors and
msgspec validation errors into ``application/problem+json`` bodies that name the field.
A database that cannot be reached gives a retryable 503; other unexpected exceptions
become a 500 problem without internals.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ExceptionHandlersMap

from armada.api import field_paths
from armada.api.guard import BODY_JSON
from armada.eventstore.outages import is_database_unavailable
from armada.model.errors import (
    ArmadaError,
    Conflict,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    TooLarge,
    Unauthenticated,
    Unavailable,
)

PROBLEM_JSON = "application/problem+json"
log = structlog.get_logger(__name__)


def problem(
    status: int,
    title: str,
    detail: str,
    *,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response[Any]:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    if field is not None:
        body["field"] = field
    body.update(extra)
    return Response(content=body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


#: HTTP status and problem title of each domain error class (subclasses inherit theirs).
STATUS: dict[type[ArmadaError], tuple[int, str]] = {
    ArmadaError: (400, "Bad request"),
    InvalidRequest: (400, "Bad request"),
    Unauthenticated: (401, "Unauthenticated"),
    PermissionDenied: (403, "Forbidden"),
    NotFound: (404, "Not found"),
    Conflict: (409, "Conflict"),
    TooLarge: (413, "Content too large"),
    LimitExceeded: (429, "Too many requests"),
    Unavailable: (503, "Service unavailable"),
}


def status_of(exc: ArmadaError) -> tuple[int, str]:
    """HTTP status and title of ``exc``: those of its nearest class in :data:`STATUS`."""
    return next(STATUS[cls] for cls in type(exc).__mro__ if cls in STATUS)


def _armada_error(_request: Request[Any, Any, Any], exc: ArmadaError) -> Response[Any]:
    retry = exc.retry_after if isinstance(exc, LimitExceeded) else None
    headers = {"Retry-After": str(retry)} if retry is not None else None
    status, title = status_of(exc)
    return problem(status, title, exc.detail, field=exc.field, headers=headers)


#: msgspec names an unknown or a missing field in the message, not in the path.
_NAMED_FIELD = re.compile(r"(?:unknown|missing required) field `([^`]+)`")
_BOUND = re.compile(r"Expected `(?:float|int)` [<>]")


def _validation_error(request: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    """Litestar's body/parameter validation: report the first field that failed."""
    field: str | None = None
    detail = exc.detail
    extra = exc.extra if isinstance(exc.extra, list) else []
    if extra and isinstance(extra[0], dict):
        first = extra[0]
        # "data" is Litestar's name for the whole body: leave it out of the field path.
        field = str(first.get("key") or "").removeprefix("data") or None
        message = first.get("message")
        if message:
            detail = str(message)
            named = _NAMED_FIELD.search(detail)
            if named:
                field = f"{field}.{named[1]}" if field else named[1]
            if field and first.get("source") == "body":
                field = field_paths.resolve(field, request.scope.get(BODY_JSON), detail)
            if _BOUND.match(detail):
                detail += " (numbers must be finite and in range)"
    return problem(400, "Bad request", detail, field=field)


def _http_error(_request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    return problem(exc.status_code, _reason(exc.status_code), exc.detail, headers=exc.headers)


#: Seconds a client should wait before retrying when the database is unreachable.
RETRY_AFTER_SECONDS = 1


def _unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    if is_database_unavailable(exc):
        log.warning("database unavailable", path=request.url.path, error=str(exc).splitlines()[0])
        response = problem(503, "Service unavailable", "the database cannot be reached; retry shortly")
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    log.exception("unhandled error", path=request.url.path)
    return problem(500, "Internal server error", "an unexpected error occurred; see the server log")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    ArmadaError: _armada_error,
    ValidationException: _validation_error,
    HTTPException: _http_error,
    Exception: _unexpected,
}
