"""Browser sessions of Lookout's single sign-on, kept in the server's memory.

The browser holds only a random session id (in an HttpOnly cookie); the tokens stay on
the server, keyed by the id's SHA-256 so that the table itself holds nothing a browser
could present. A request finding its tokens within ``refreshMarginSeconds`` of expiry
refreshes them first (one refresh per session at a time: providers rotate refresh tokens);
a refresh the issuer refuses ends the session, and so does ``sessionMaxAgeSeconds``.
Sign-ins under way are remembered for :data:`SIGN_IN_SECONDS` by their ``state``.

Sessions are per process: a deployment with several replicas routes each browser to one
(sticky sessions), or a browser signs in again when it changes replica.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import NamedTuple

import structlog

from armada.auth.identity import Identity
from armada.auth.relying_party import Pkce, RelyingParty, SignInFailed, Tokens
from armada.auth.settings import AuthSettings

log = structlog.get_logger(__name__)

#: Seconds a browser has to come back from the issuer's sign-in page.
SIGN_IN_SECONDS = 600.0


class Started(NamedTuple):
    """A sign-in under way: the ``state`` its browser must bring back, and where to send it."""

    state: str
    url: str


@dataclass
class _Pending:
    pkce: Pkce
    nonce: str
    redirect_uri: str
    next_path: str
    started: float


@dataclass
class _Session:
    tokens: Tokens
    ends_at: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class BrowserSessions:
    def __init__(self, party: RelyingParty) -> None:
        self.party = party
        self._settings = party.settings
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    async def begin(self, redirect_uri: str, next_path: str) -> Started:
        """A new sign-in: the issuer's URL to send the browser to."""
        now = time.time()
        while self._pending and (
            len(self._pending) >= self._settings.max_sessions
            or next(iter(self._pending.values())).started < now - SIGN_IN_SECONDS
        ):
            self._pending.popitem(last=False)
        state, nonce, pkce = secrets.token_urlsafe(32), secrets.token_urlsafe(32), Pkce.new()
        url = await self.party.authorization_url(redirect_uri, state, nonce, pkce)
        self._pending[state] = _Pending(pkce, nonce, redirect_uri, next_path, now)
        return Started(state, url)

    async def finish(self, state: str, code: str) -> tuple[str, str]:
        """The new session's id and the path to send the browser back to."""
        pending = self._pending.pop(state, None)
        if pending is None or pending.started < time.time() - SIGN_IN_SECONDS:
            raise SignInFailed("unknown or expired sign-in state")
        tokens = await self.party.exchange(code, pending.redirect_uri, pending.pkce.verifier, pending.nonce)
        while len(self._sessions) >= self._settings.max_sessions:
            self._sessions.popitem(last=False)
        session_id = secrets.token_urlsafe(32)
        ends_at = time.time() + self._settings.session_max_age_seconds
        self._sessions[_key(session_id)] = _Session(tokens, ends_at)
        log.info("signed in to Lookout", user=tokens.identity.name)
        return session_id, pending.next_path

    async def identify(self, session_id: str) -> Identity | None:
        """The session's user, its tokens refreshed when near expiry; ``None``: no such session
        (any more)."""
        key = _key(session_id)
        session = self._sessions.get(key)
        if session is None:
            return None
        async with session.lock:
            now = time.time()
            if now >= session.ends_at:
                self._sessions.pop(key, None)
                return None
            if session.tokens.expires_at - now <= self._settings.refresh_margin_seconds:
                try:
                    session.tokens = await self.party.refresh(session.tokens)
                except SignInFailed as exc:
                    log.info(
                        "Lookout session ended: refresh refused",
                        user=session.tokens.identity.name,
                        why=str(exc),
                    )
                    self._sessions.pop(key, None)
                    return None
        return session.tokens.identity

    async def end(self, session_id: str, after: str) -> str:
        """Forget the session; the issuer's end-session URL (returning to ``after``), if any."""
        session = self._sessions.pop(_key(session_id), None)
        if session is None:
            return ""
        try:
            return await self.party.end_session_url(session.tokens.id_token, after)
        except SignInFailed:
            return ""


def browser_sessions(settings: AuthSettings, local_names: frozenset[str]) -> BrowserSessions | None:
    """Lookout's sign-in, when ``auth.lookoutSignIn`` is set."""
    if settings.lookout_sign_in is None or settings.oidc is None:
        return None
    return BrowserSessions(RelyingParty(settings.oidc, settings.lookout_sign_in, local_names=local_names))
