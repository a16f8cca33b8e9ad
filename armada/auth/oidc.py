"""OpenID Connect bearer tokens: JWTs checked against the provider's JWKS.

Signature, ``iss``, ``aud``, ``exp`` (and ``nbf``/``iat`` when present) are verified; the
user name and groups come from configurable claims. The JWKS is read from a file once,
or fetched from a URL and cached (PyJWT refetches it when a token names an unknown key);
while the provider cannot be reached, the keys fetched last keep working for
``jwksMaxStaleSeconds``, so a short outage of the issuer does not lock everyone out.

Token identities live in their own namespace: names get ``usernamePrefix`` (default
``oidc:``), so a token cannot act as a local basic or token user of the same name; with an
empty prefix a token naming a local user or ``anonymous`` is refused instead. The
reserved groups (``anonymous`` and ``armada:*``) are dropped from a token's groups.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jwt
import structlog

from armada.auth.bind_address import oidc_refusals
from armada.auth.identity import ANONYMOUS, Identity
from armada.auth.settings import OidcSettings

log = structlog.get_logger(__name__)


class InvalidToken(Exception):
    """The bearer token is a JWT that does not verify; the reason is logged, never returned."""


#: Group prefix reserved for armada's own internal identities (the dev executor's).
RESERVED_GROUP_PREFIX = "armada:"


class StaleTolerantJWKClient(jwt.PyJWKClient):
    """A JWKS client that falls back on the keys it fetched last while the provider is down.

    The fallback is bounded: keys older than ``max_stale_seconds`` are not used, so a key
    the provider has revoked stops working at most that long after the outage began.
    """

    def __init__(self, uri: str, *, max_stale_seconds: float, **kwargs: Any) -> None:
        super().__init__(uri, **kwargs)
        self._max_stale_seconds = max_stale_seconds
        self._last_good: tuple[float, Any] | None = None

    def fetch_data(self) -> Any:
        try:
            data = super().fetch_data()
        except jwt.PyJWKClientConnectionError as exc:
            if self._last_good is None or time.monotonic() - self._last_good[0] > self._max_stale_seconds:
                raise
            log.warning("JWKS provider unreachable: using the keys fetched before", error=str(exc))
            return self._last_good[1]
        self._last_good = (time.monotonic(), data)
        return data


class OidcVerifier:
    def __init__(self, settings: OidcSettings, *, local_names: Iterable[str] = ()) -> None:
        if refusals := oidc_refusals(settings):
            raise ValueError("; ".join(refusals))
        self._settings = settings
        self._local_names = frozenset(local_names) | {ANONYMOUS}
        self._keys: jwt.PyJWKSet | None = None
        self._client: jwt.PyJWKClient | None = None
        if settings.jwks_file:
            self._keys = jwt.PyJWKSet.from_json(Path(settings.jwks_file).read_text())
        else:
            self._client = StaleTolerantJWKClient(
                settings.jwks_url,
                max_stale_seconds=settings.jwks_max_stale_seconds,
                cache_jwk_set=True,
                lifespan=max(1.0, settings.jwks_cache_seconds),
                timeout=10,
                cooldown_duration=settings.jwks_refetch_cooldown_seconds,
            )

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return token.count(".") == 2

    async def verify(self, token: str) -> Identity:
        return self.identity(await self.claims(token))

    async def claims(self, token: str) -> dict[str, Any]:
        """The token's claims once its signature, issuer, audience and times verify."""
        try:
            key = await self._signing_key(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=self._settings.algorithms,
                audience=self._settings.audience,
                issuer=self._settings.issuer,
                leeway=self._settings.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except (jwt.PyJWTError, KeyError, ValueError) as exc:
            log.info("bearer token rejected", reason=f"{type(exc).__name__}: {exc}")
            raise InvalidToken from exc
        return claims

    def identity(self, claims: dict[str, Any]) -> Identity:
        """The user (prefixed) and groups (reserved ones dropped) that verified claims name."""
        name = _claim(claims, self._settings.username_claim)
        if not isinstance(name, str) or not name:
            log.info("bearer token rejected", reason=f"no {self._settings.username_claim!r} claim")
            raise InvalidToken
        name = self._settings.username_prefix + name
        if name in self._local_names:
            log.info("bearer token rejected", reason=f"user {name!r} is a local or reserved user")
            raise InvalidToken
        groups = [
            group
            for group in _groups(_claim(claims, self._settings.groups_claim))
            if group != ANONYMOUS and not group.startswith(RESERVED_GROUP_PREFIX)
        ]
        return Identity.of(name, groups)

    async def _signing_key(self, token: str) -> Any:
        if self._client is not None:
            # PyJWKClient fetches with blocking urllib: keep it off the event loop.
            if jwt.get_unverified_header(token).get("kid") is None:  # a JWKS of one key needs no id
                keys = await asyncio.to_thread(self._client.get_signing_keys)
                if len(keys) == 1:
                    return keys[0].key
            signing = await asyncio.to_thread(self._client.get_signing_key_from_jwt, token)
            return signing.key
        assert self._keys is not None
        kid = jwt.get_unverified_header(token).get("kid")
        if kid is None and len(self._keys.keys) == 1:
            return self._keys.keys[0].key
        return self._keys[str(kid)].key


def _claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by name, or by dotted path into nested objects (``realm_access.roles``)."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _groups(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []
