"""Errors the clients raise, as one tree (after httpx's ``_exceptions``)::

    ArmadaClientError             anything a call to the server raises
    ├── ArmadaTransportError      no answer: cannot connect, TLS, timeout, connection reset
    ├── UnexpectedResponse        an answer that is not what the API sends
    └── ArmadaApiError            the server refused the request (its RFC 9457 problem)
        ├── BadRequest            400, also named InvalidArgument
        ├── AccessRefused
        │   ├── Unauthenticated   401
        │   └── PermissionDenied  403
        ├── NotFound              404
        ├── Conflict              409
        ├── TooManyRequests       429
        └── ServerError           5xx

``ArmadaTransportError`` is also an ``httpx.TransportError``, so code written against the
client before this tree keeps working.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

#: Status codes worth retrying: the request may succeed later unchanged (401/403 included:
#: a credential may be rotated or granted meanwhile).
RETRYABLE_STATUS = frozenset({401, 403, 408, 425, 429, 500, 502, 503, 504})


class ArmadaClientError(Exception):
    """A call to the server failed; ``retryable`` says whether trying again may help."""

    #: The HTTP status of the answer, if there was one.
    status: int | None = None

    @property
    def retryable(self) -> bool:
        return False


class ArmadaTransportError(ArmadaClientError, httpx.TransportError):
    """The request got no answer (cannot connect, TLS, timeout, connection reset)."""

    @property
    def retryable(self) -> bool:
        return True


class UnexpectedResponse(ArmadaClientError):
    """The server's answer is not one the API sends (a body that does not decode)."""

    @property
    def retryable(self) -> bool:
        return True


class ArmadaApiError(ArmadaClientError):
    """The server refused a request; carries its problem detail and the field it names."""

    def __init__(self, status: int, title: str, detail: str, field: str | None = None) -> None:
        super().__init__(f"{detail} (field {field})" if field else detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.field = field

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE_STATUS

    @classmethod
    def from_response(cls, response: httpx.Response) -> ArmadaApiError:
        """The error a non-2xx response stands for, of the class its status names."""
        error = _BY_STATUS.get(response.status_code) or (
            ServerError if response.status_code >= 500 else ArmadaApiError
        )
        try:
            body: Any = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            body = None
        if not isinstance(body, dict):
            text = response.text.strip()[:500] or response.reason_phrase
            return error(response.status_code, response.reason_phrase, text)
        return error(
            response.status_code,
            str(body.get("title", response.reason_phrase)),
            str(body.get("detail", "")),
            body.get("field"),
        )


class BadRequest(ArmadaApiError):
    """400: the request is not valid (``field`` names what is wrong)."""


#: gRPC's name for :class:`BadRequest`.
InvalidArgument = BadRequest


class AccessRefused(ArmadaApiError):
    """401 or 403: the caller is refused, whatever it asks."""


class Unauthenticated(AccessRefused):
    """401: no credential, or one the server does not accept."""


class PermissionDenied(AccessRefused):
    """403: the credential is known but may not do this."""


class NotFound(ArmadaApiError):
    """404: no such queue, job, policy, executor…"""


class Conflict(ArmadaApiError):
    """409: the request clashes with the current state (it exists already, it changed)."""


class TooManyRequests(ArmadaApiError):
    """429: slow down and try again."""


class ServerError(ArmadaApiError):
    """5xx: the server failed or is unavailable."""


_BY_STATUS: dict[int, type[ArmadaApiError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    429: TooManyRequests,
}
