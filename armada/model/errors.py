"""Error hierarchy shared by services and the API.

Services raise these; the API turns them into RFC 9457 problem responses. Each error
knows its HTTP status so that no layer has to guess, and may name the offending field.
"""

from __future__ import annotations


class ArmadaError(Exception):
    """Base of every error a user can cause and be told about."""

    status = 400
    title = "Bad request"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class InvalidRequest(ArmadaError):
    """The request is malformed or breaks a validation rule (400)."""


class Unauthenticated(ArmadaError):
    status = 401
    title = "Unauthenticated"


class PermissionDenied(ArmadaError):
    status = 403
    title = "Forbidden"


class NotFound(ArmadaError):
    status = 404
    title = "Not found"


class Conflict(ArmadaError):
    """The request clashes with the current state, e.g. a cordoned queue (409)."""

    status = 409
    title = "Conflict"


class PayloadTooLarge(ArmadaError):
    status = 413
    title = "Payload too large"


class LimitExceeded(ArmadaError):
    """A quota is used up: too many queued jobs in a queue, open streams, failed logins (429).

    ``retry_after`` (seconds) is set when waiting alone will lift the limit.
    """

    status = 429
    title = "Too many requests"

    def __init__(self, detail: str, *, field: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(detail, field=field)
        self.retry_after = retry_after


class Unavailable(ArmadaError):
    """A dependency (usually the database) cannot be reached right now (503)."""

    status = 503
    title = "Service unavailable"
