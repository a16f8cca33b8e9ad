"""Error hierarchy shared by services and the transports.

Services raise these with a meaning (invalid, not found, conflict, ...), a ``detail`` for
the user and, where one input is to blame, the ``field`` it came from. They carry no
transport status: each transport maps the classes to its own codes at its edge (REST in
:mod:`armada.api.problems`).
"""

from __future__ import annotations


class ArmadaError(Exception):
    """Base of every error a user can cause and be told about."""

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class InvalidRequest(ArmadaError):
    """The request is malformed or breaks a validation rule."""


class Unauthenticated(ArmadaError):
    """No acceptable credentials.

    ``scheme`` is the authentication scheme that refused them and ``error`` its RFC 6750
    error code, if any, so that a challenge can name both.
    """

    def __init__(self, detail: str, *, scheme: str = "", error: str = "") -> None:
        super().__init__(detail)
        self.scheme = scheme
        self.error = error


class PermissionDenied(ArmadaError):
    """The caller is known but may not do this."""


class NotFound(ArmadaError):
    """The named queue, job, job set or report does not exist (or is hidden from the caller)."""


class Conflict(ArmadaError):
    """The request clashes with the current state, e.g. a cordoned queue."""


class HistoryRewound(Conflict):
    """The event log went back in time behind the caller's position (the database was
    restored, or failed over to a standby that missed commits): the message ids after its
    head that the caller saw are gone and are being given to new events."""


class TooLarge(ArmadaError):
    """One input is larger than the server keeps (a saved view's state, say)."""


class LimitExceeded(ArmadaError):
    """A quota is used up: too many queued jobs in a queue, open streams, failed logins.

    ``retry_after`` (seconds) is set when waiting alone will lift the limit.
    """

    def __init__(self, detail: str, *, field: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(detail, field=field)
        self.retry_after = retry_after


class Unavailable(ArmadaError):
    """A component the answer depends on cannot answer now (an executor that went silent);
    trying again later may work."""
