"""OpenID Connect bearer tokens: JWTs checked against the provider's JWKS.

Signature, ``iss``, ``aud``, ``exp`` (and ``nbf``/``iat`` when present) are verified; the
user name and groups come from configurable claims. The JWKS is read from a file once,
or fetched from a URL and cached (PyJWT refetches it when a token names an unknown key).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import jwt
import structlog

from armada.auth.identity import Identity
from armada.auth.settings import OidcSettings

log = structlog.get_logger(__name__)


class InvalidToken(Exception):
    """The bearer token is a JWT that does not verify; the reason is logged, never returned."""


class OidcVerifier:
    def __init__(self, settings: OidcSettings) -> None:
        self._settings = settings
        self._keys: jwt.PyJWKSet | None = None
        self._client: jwt.PyJWKClient | None = None
        if settings.jwks_file:
            self._keys = jwt.PyJWKSet.from_json(Path(settings.jwks_file).read_text())
        else:
            self._client = jwt.PyJWKClient(
                settings.jwks_url,
                cache_jwk_set=True,
                lifespan=max(1.0, settings.jwks_cache_seconds),
                timeout=10,
                cooldown_duration=settings.jwks_refetch_cooldown_seconds,
            )

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return token.count(".") == 2

    async def verify(self, token: str) -> Identity:
        try:
            key = await self._signing_key(token)
            claims = jwt.decode(
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
        name = _claim(claims, self._settings.username_claim)
        if not isinstance(name, str) or not name:
            log.info("bearer token rejected", reason=f"no {self._settings.username_claim!r} claim")
            raise InvalidToken
        return Identity.of(name, _groups(_claim(claims, self._settings.groups_claim)))

    async def _signing_key(self, token: str) -> Any:
        if self._client is not None:
            # PyJWKClient fetches with blocking urllib: keep it off the event loop.
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
