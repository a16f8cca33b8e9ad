"""What a browser must not be made to do: cross-site requests that change state, and
framing or sniffing of our responses.

A browser sends the user's credentials (a remembered basic-auth login, or Lookout's
session cookie where ``SameSite`` does not hold it back) with requests that
*another* site's page makes, so without these checks any page a signed-in user visits could
submit, cancel or delete on their behalf (CSRF). Requests that change state
(``POST``/``PUT``/``PATCH``/``DELETE``) are therefore refused, before authentication or any
other work:

- with 403 when the browser says they come from another site (``Sec-Fetch-Site:
  cross-site``) or their ``Origin`` is not this server's own (nor one listed in
  ``server.corsAllowOrigins``);
- with 415 when they carry a body that is not ``application/json``: an HTML form or a
  "simple" cross-site ``fetch`` can only send form or text bodies without a CORS
  preflight, which the server does not grant to foreign origins.

Executors, the CLI and the Python client send JSON and no ``Origin``, so they pass.
Every response also carries headers that keep the Lookout UI from being framed
(clickjacking), sniffed into another content type or leaking its URLs (with job ids and
filters) to other sites; the Content-Security-Policy allows only the UI's own scripts,
styles and connections. The OpenAPI pages under ``/schema`` load their viewers from a CDN
and get no CSP.
"""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus
from typing import NamedTuple
from urllib.parse import urlsplit

import msgspec
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from armada.api.problems import PROBLEM_JSON

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
_CSP = (b"content-security-policy", CONTENT_SECURITY_POLICY.encode())
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _authority(host: str) -> str:
    """``host[:port]`` lower-cased, without a default port: browsers leave it out of
    ``Origin``, and behind a TLS-terminating proxy the scheme we see is not the browser's."""
    host = host.strip().lower()
    for default in _DEFAULT_PORTS.values():
        host = host.removesuffix(f":{default}")
    return host


class Refusal(NamedTuple):
    status: int
    detail: str
    #: The request header at fault.
    header: str

    def body(self) -> bytes:
        title = HTTPStatus(self.status).phrase
        problem = {"type": "about:blank", "title": title, "status": self.status, "detail": self.detail}
        return msgspec.json.encode({**problem, "field": self.header})


_JSON_ONLY = "the request body must be application/json"
#: The request headers :meth:`BrowserSafety.refusal` reads (the rest are not decoded).
_READ = frozenset(
    {b"origin", b"sec-fetch-site", b"host", b"content-type", b"content-length", b"transfer-encoding"}
)


class BrowserSafety(ASGIMiddleware):
    """CSRF refusals and security headers (see the module's docstring)."""

    def __init__(self, allowed_origins: Iterable[str] = ()) -> None:
        self.allowed_origins = frozenset(origin.rstrip("/").lower() for origin in allowed_origins)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope["type"] != ScopeType.HTTP:
            await next_app(scope, receive, send)
            return
        extra = [*SECURITY_HEADERS] if scope["path"].startswith("/schema") else [*SECURITY_HEADERS, _CSP]

        async def secured_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(h for h in extra if h[0] not in present)]
            await send(message)

        refusal = self.refusal(scope.get("method", ""), scope["headers"])
        if refusal is None:
            await next_app(scope, receive, secured_send)
            return
        body = refusal.body()
        headers = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode())]
        await secured_send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await secured_send({"type": "http.response.body", "body": body, "more_body": False})

    def refusal(self, method: str, raw_headers: Iterable[tuple[bytes, bytes]]) -> Refusal | None:
        """Why a request is refused, if it is: only state-changing ones ever are."""
        if method not in STATE_CHANGING:
            return None
        headers = {
            name.lower().decode("latin-1"): value.decode("latin-1")
            for name, value in raw_headers
            if name.lower() in _READ
        }
        origin = headers.get("origin")
        allowed = origin is not None and origin.rstrip("/").lower() in self.allowed_origins
        if headers.get("sec-fetch-site", "").strip().lower() == "cross-site" and not allowed:
            return Refusal(403, "requests from other sites may not change anything here", "Sec-Fetch-Site")
        if origin is not None and not allowed and not _own(origin, headers.get("host", "")):
            return Refusal(403, f"requests from origin {origin!r} may not change anything here", "Origin")
        content_type = headers.get("content-type")
        if content_type is None:
            length = headers.get("content-length", "0").strip()
            has_body = length not in ("", "0") or "transfer-encoding" in headers
            return Refusal(415, _JSON_ONLY, "Content-Type") if has_body else None
        if content_type.split(";", 1)[0].strip().lower() != "application/json":
            return Refusal(415, f"{_JSON_ONLY}, not {content_type!r}", "Content-Type")
        return None


def _own(origin: str, host: str) -> bool:
    """Whether ``origin`` is this server as the browser addressed it (its ``Host``)."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or not host:
        return False  # "null" (sandboxed pages, file: URLs) or garbage is nobody's origin
    return _authority(parts.netloc) == _authority(host)
