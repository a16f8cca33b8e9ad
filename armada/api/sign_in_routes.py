"""Lookout's single sign-on: ``/auth/login``, ``/auth/callback``, ``/auth/logout``, ``/auth/session``.

The session id travels only in a cookie that scripts cannot read (``HttpOnly``), that is
sent to this host alone and only over HTTPS (``__Host-`` prefix, ``Secure``; relaxed when
the browser addresses the server by a loopback name, where there is no HTTPS to insist
on), and that other sites' pages do not send along with their requests (``SameSite=Lax``;
``Strict`` would also drop it on the issuer's redirect back, so a fresh sign-in would land
signed out). What a cookie-authenticated request may change is guarded exactly as for
every browser request (:mod:`armada.api.browser_safety`). The sign-in's ``state`` is bound
to the browser that started it by a second short-lived cookie, so a code obtained by
someone else cannot sign this browser in as them.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any

import msgspec
import structlog
from litestar import Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.params import QueryParameter
from litestar.response import Redirect

from armada.api.access import SECURE_SESSION_COOKIE, SESSION_COOKIE, session_cookie
from armada.api.problems import problem
from armada.api.services import services_of
from armada.auth.policy import public
from armada.auth.relying_party import SignInFailed
from armada.auth.sessions import SIGN_IN_SECONDS, BrowserSessions

log = structlog.get_logger(__name__)

TAGS = ["lookout"]
STATE_COOKIE = "armada-sign-in"
#: Where the browser returns after signing in (a path of this server).
NextPath = Annotated[str, QueryParameter(name="next", max_length=2048)]
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


class SessionInfo(msgspec.Struct, rename="camel", kw_only=True):
    """What the Lookout header shows: whether sign-in is on, and who is signed in."""

    sign_in: bool
    signed_in: bool = False
    name: str = ""
    groups: list[str] = []


class SignedOut(msgspec.Struct, rename="camel", kw_only=True):
    #: Where to send the browser to end its session at the issuer too (empty: nowhere).
    end_session_url: str = ""


def _sessions(request: Request[Any, Any, Any]) -> BrowserSessions | None:
    return services_of(request.app.state).access.sessions


def _secure(request: Request[Any, Any, Any]) -> bool:
    return request.url.scheme == "https" or (request.url.hostname or "") not in LOOPBACK


def _cookie(request: Request[Any, Any, Any], name: str, value: str, max_age: int, path: str = "/") -> Cookie:
    secure = _secure(request)
    if name == SESSION_COOKIE and secure:
        name = SECURE_SESSION_COOKIE
    return Cookie(
        key=name, value=value, max_age=max_age, path=path, httponly=True, secure=secure, samesite="lax"
    )


def _safe_next(path: str) -> str:
    """A path of this server only (never ``//host`` or ``/\\host``, which browsers take as hosts)."""
    if not path.startswith("/") or path.startswith(("//", "/\\")):
        return "/"
    return path


def _redirect_uri(request: Request[Any, Any, Any], sessions: BrowserSessions) -> str:
    return sessions.party.settings.redirect_url or f"{str(request.base_url).rstrip('/')}/auth/callback"


@get("/auth/session", tags=TAGS, summary="Lookout's sign-in: on, and who is signed in", opt=public())
async def session_info(request: Request[Any, Any, Any]) -> SessionInfo:
    sessions = _sessions(request)
    session_id = session_cookie(request)
    if sessions is None or not session_id:
        return SessionInfo(sign_in=sessions is not None)
    identity = await sessions.identify(session_id)
    if identity is None:
        return SessionInfo(sign_in=True)
    return SessionInfo(sign_in=True, signed_in=True, name=identity.name, groups=sorted(identity.groups))


@get("/auth/login", tags=TAGS, summary="Sign in to Lookout with the OIDC issuer", opt=public())
async def login(request: Request[Any, Any, Any], next_path: NextPath = "/") -> Response[Any]:
    sessions = _sessions(request)
    if sessions is None:
        return problem(404, "Not Found", "Lookout sign-in is not configured (auth.lookoutSignIn)")
    try:
        started = await sessions.begin(_redirect_uri(request, sessions), _safe_next(next_path))
    except SignInFailed as exc:
        log.warning("Lookout sign-in could not start", why=str(exc))
        return problem(502, "Bad Gateway", "the sign-in provider cannot be reached")
    state = _cookie(request, STATE_COOKIE, started.state, int(SIGN_IN_SECONDS), path="/auth")
    return Redirect(started.url, status_code=303, cookies=[state], headers={"Cache-Control": "no-store"})


@get("/auth/callback", tags=TAGS, summary="Where the OIDC issuer sends the browser back", opt=public())
async def callback(request: Request[Any, Any, Any]) -> Response[Any]:
    query = request.query_params
    code, state, error = query.get("code", ""), query.get("state", ""), query.get("error", "")
    sessions = _sessions(request)
    if sessions is None:
        return problem(404, "Not Found", "Lookout sign-in is not configured (auth.lookoutSignIn)")
    expected = request.cookies.get(STATE_COOKIE, "")
    if error or not code or not state or not secrets.compare_digest(state.encode(), expected.encode()):
        why = f"the sign-in provider answered {error!r}" if error else "this sign-in was not started here"
        return problem(400, "Bad Request", f"{why}: sign in again from Lookout", field="state")
    try:
        session_id, next_path = await sessions.finish(state, code)
    except SignInFailed as exc:
        log.warning("Lookout sign-in failed", why=str(exc))
        return problem(400, "Bad Request", "the sign-in did not complete: sign in again from Lookout")
    max_age = int(sessions.party.settings.session_max_age_seconds)
    cookies = [
        _cookie(request, SESSION_COOKIE, session_id, max_age),
        _cookie(request, STATE_COOKIE, "", 0, path="/auth"),
    ]
    return Redirect(next_path, status_code=303, cookies=cookies, headers={"Cache-Control": "no-store"})


@post("/auth/logout", status_code=200, tags=TAGS, summary="Sign out of Lookout", opt=public())
async def logout(request: Request[Any, Any, Any]) -> Response[SignedOut]:
    """Ends the session here and says where the issuer's session ends (the app goes there)."""
    sessions = _sessions(request)
    session_id = session_cookie(request)
    url = ""
    if sessions is not None and session_id:
        url = await sessions.end(session_id, f"{str(request.base_url).rstrip('/')}/?signedOut=1")
    gone = [_cookie(request, SESSION_COOKIE, "", 0)]
    return Response(SignedOut(end_session_url=url), cookies=gone, headers={"Cache-Control": "no-store"})


ROUTES = [session_info, login, callback, logout]
