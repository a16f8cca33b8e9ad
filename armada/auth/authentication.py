"""Authentication: from a request's ``Authorization`` header to an :class:`Identity`.

Basic users, static bearer tokens and OIDC bearer tokens are tried in that order and the
first that accepts the credentials wins. A request without credentials is anonymous when
that is allowed; a request with credentials nobody accepts is refused (never downgraded
to anonymous), and the refusal never says more than "invalid credentials/token".

Password checks are the expensive part (scrypt), so they are rationed twice: wrong
passwords are throttled per client address and per user (:mod:`armada.auth.throttle`),
and at most ``passwordHashConcurrency`` checks run at once, the rest waiting their turn.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import secrets
from collections.abc import Iterable

import structlog

from armada.auth.identity import ANONYMOUS_IDENTITY, Identity
from armada.auth.oidc import InvalidToken, OidcVerifier
from armada.auth.secrets import hash_password, hash_token, verify_password
from armada.auth.settings import AuthSettings, StaticToken
from armada.auth.throttle import LoginThrottle
from armada.model.errors import Unauthenticated

log = structlog.get_logger(__name__)

#: Successful basic logins remembered, so that scrypt runs once per credential, not per request.
_BASIC_CACHE_SIZE = 1024


class Authentication:
    def __init__(self, settings: AuthSettings, *, extra_tokens: Iterable[StaticToken] = ()) -> None:
        self._settings = settings
        self._users = settings.basic_users
        self._tokens = {token.token_hash: token for token in [*settings.tokens, *extra_tokens]}
        #: Names of local (basic and token) users: OIDC identities may never take one.
        self.local_names = frozenset({*self._users, *(token.user for token in self._tokens.values())})
        self._oidc = OidcVerifier(settings.oidc, local_names=self.local_names) if settings.oidc else None
        self._cache_key = secrets.token_bytes(32)
        self._basic_cache: dict[bytes, Identity] = {}
        # Unknown users cost as much as wrong passwords, so timing does not reveal names.
        self._decoy_hash = hash_password(secrets.token_urlsafe(16)) if self._users else ""
        self._throttle = LoginThrottle(settings.failed_login_limit, settings.failed_login_window_seconds)
        self._hashing = asyncio.Semaphore(settings.password_hash_concurrency)

    @property
    def schemes(self) -> list[str]:
        """Schemes offered in ``WWW-Authenticate`` challenges."""
        schemes = ["Basic"] if self._users else []
        return [*schemes, "Bearer"] if self._tokens or self._oidc else schemes

    def challenge(self, error: Unauthenticated) -> str:
        realm = f'realm="{self._settings.realm}"'
        parts = []
        for scheme in self.schemes or ["Bearer"]:
            extra = f', error="{error.error}"' if error.error and scheme == error.scheme else ""
            parts.append(f"{scheme} {realm}{extra}")
        return ", ".join(parts)

    async def identify(self, authorization: str | None, *, client: str = "") -> Identity:
        """The caller's identity; ``client`` (its address) keys the failed-login throttle.

        Raises :class:`Unauthenticated`, or :class:`~armada.auth.throttle.LoginThrottled`
        when this client or user has failed too often recently.
        """
        if not authorization:
            if self._settings.anonymous:
                return ANONYMOUS_IDENTITY
            raise Unauthenticated("credentials required")
        scheme, _, credentials = authorization.strip().partition(" ")
        credentials = credentials.strip()
        if scheme.lower() == "basic" and self._users:
            return await self._basic(credentials, client)
        if scheme.lower() == "bearer" and credentials:
            return await self._bearer(credentials)
        raise Unauthenticated("invalid credentials")

    async def _basic(self, credentials: str, client: str) -> Identity:
        cache_key = hashlib.sha256(self._cache_key + credentials.encode()).digest()
        if (known := self._basic_cache.get(cache_key)) is not None:
            return known
        try:
            name, _, password = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthenticated("invalid credentials", scheme="Basic") from None
        keys = (f"client:{client}", f"user:{name[:256]}")  # bounded: the table holds 100,000 keys
        self._throttle.check(*keys)
        user = self._users.get(name)
        encoded = user.password_hash if user else self._decoy_hash
        async with self._hashing:
            verified = await asyncio.to_thread(verify_password, password, encoded)
        if not verified or user is None:
            self._throttle.failed(*keys)
            log.info("basic authentication failed", user=name, client=client)
            raise Unauthenticated("invalid credentials", scheme="Basic")
        identity = Identity.of(name, user.groups, user.executors)
        if len(self._basic_cache) >= _BASIC_CACHE_SIZE:
            self._basic_cache.clear()
        self._basic_cache[cache_key] = identity
        return identity

    async def _bearer(self, token: str) -> Identity:
        static = self._tokens.get(hash_token(token))
        if static is not None:
            return Identity.of(static.user, static.groups, static.executors)
        if self._oidc is not None and self._oidc.looks_like_jwt(token):
            try:
                return await self._oidc.verify(token)
            except InvalidToken:
                pass
        raise Unauthenticated("invalid token", scheme="Bearer", error="invalid_token")
