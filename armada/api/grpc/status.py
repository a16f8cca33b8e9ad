"""Domain errors → gRPC status codes: the gRPC counterpart of :mod:`armada.api.problems`.

Keyed on the error *classes*, never on their HTTP status, so that the two transports agree
on meaning and each chooses its own codes. A queue that already exists is ALREADY_EXISTS
(upstream's answer); a stream behind which the log went back in time is ABORTED (its
client should resume: from the restored head); other conflicts are FAILED_PRECONDITION. Only real bugs become
INTERNAL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from functools import wraps
from typing import Any, NoReturn, ParamSpec, TypeVar

import grpc
import msgspec
import structlog

from armada.api.grpc.guard import reject_nul
from armada.eventstore.outages import is_database_unavailable
from armada.model import errors

log = structlog.get_logger(__name__)

_CODES: list[tuple[type[errors.ArmadaError], grpc.StatusCode]] = [
    (errors.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (errors.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.HistoryRewound, grpc.StatusCode.ABORTED),
    (errors.Conflict, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.LimitExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.Unavailable, grpc.StatusCode.UNAVAILABLE),
]


def code_of(exc: errors.ArmadaError) -> grpc.StatusCode:
    """The status of ``exc``; queue creation answers ALREADY_EXISTS itself (see ``queues``)."""
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return grpc.StatusCode.INVALID_ARGUMENT


def details_of(exc: errors.ArmadaError) -> str:
    return f"{exc.field}: {exc.detail}" if exc.field else exc.detail


async def abort(context: grpc.aio.ServicerContext[Any, Any], exc: BaseException) -> NoReturn:
    """End the call with the status ``exc`` means."""
    if isinstance(exc, errors.ArmadaError):
        await context.abort(code_of(exc), details_of(exc))
    if isinstance(exc, msgspec.ValidationError):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    if is_database_unavailable(exc):
        log.warning("database unavailable", error=str(exc).splitlines()[0])
        await context.abort(grpc.StatusCode.UNAVAILABLE, "the database cannot be reached; retry shortly")
    log.error("unhandled error in a gRPC call", exc_info=exc)
    await context.abort(grpc.StatusCode.INTERNAL, "an unexpected error occurred; see the server log")
    raise AssertionError("context.abort raises")


P = ParamSpec("P")
R = TypeVar("R")


def _context(args: tuple[Any, ...]) -> grpc.aio.ServicerContext[Any, Any]:
    context: grpc.aio.ServicerContext[Any, Any] = args[-1]
    return context


def unary(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Refuse NUL characters, and map errors raised by a unary method (``self, request,
    context``) to its status."""

    @wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            reject_nul(args[1])
            return await method(*args, **kwargs)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort(_context(args), exc)

    return call


def streaming(method: Callable[P, AsyncIterator[R]]) -> Callable[P, AsyncIterator[R]]:
    """The same for a server-streaming method."""

    @wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[R]:
        try:
            reject_nul(args[1])
            async for item in method(*args, **kwargs):
                yield item
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort(_context(args), exc)

    return call
